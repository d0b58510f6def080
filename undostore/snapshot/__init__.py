"""Capturing the files: git's ignore rules, the folder walk, and the snapshot that turns the walk
and the stat cache into a git tree in the store. With watchman (`watchman`, `changes`), only the
folders holding a change are read; `capture` matches folders against the stat cache and builds the
trees. Builds on `store` and `git`."""
