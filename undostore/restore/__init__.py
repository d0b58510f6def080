"""Putting a snapshot back: path rules, the pure plan, what the disk holds, the restore journal,
and the checkout that applies a plan so a crash leaves every file old or new. Builds on
`snapshot` (the safety snapshot), `store` and `git`."""
