"""Capturing the files: git's ignore rules, the folder walk, and the snapshot that turns the walk
and the stat cache into a git tree in the store. Builds on `store` and `git`."""
