"""Putting a snapshot back: path rules, the pure plan, what the disk holds, the restore journal,
the checkout that applies a plan so a crash leaves every file old or new, and revert (a 3-way
merge of one change into the files now, then a restore to the result). Builds on
`snapshot` (the safety snapshot), `diff` (the merge), `store` and `git`."""
