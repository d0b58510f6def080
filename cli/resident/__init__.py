"""The resident per-user process (`UNDOSTORE_RESIDENT=on`): it imports what a hook call needs
once and runs each call in a fork (serve.py); the small client a hook call starts to reach it
is cli/resident_client.py, beside the entry that uses it."""
