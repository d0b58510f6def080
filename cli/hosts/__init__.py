"""Agent hosts: their hook events, the hook itself, `/undo` typed in a host, `init`'s config
files and `doctor`'s host checks."""
