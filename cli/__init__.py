"""The `undostore` command line: parse, make one library call, render."""
