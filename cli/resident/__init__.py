"""The resident per-user process (on by default on Linux and macOS; `UNDOSTORE_RESIDENT=off`
opts out): it imports what a hook call needs once and runs each call in a fork (serve.py); the
small client a hook call starts to reach it is cli/resident_client.py, beside the entry that
uses it."""
