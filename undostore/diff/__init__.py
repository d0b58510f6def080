"""Comparing snapshots: the tree walk that finds changed paths, rename detection, git's line
diff, and the text forms `git diff-tree` prints. Reads the store only, never the files."""
