"""Comparing snapshots: the tree walk that finds changed paths, rename detection, git's line
diff, the text forms `git diff-tree` prints, and the 3-way merge of file contents (merge.py).
Reads the store only, never the files."""
