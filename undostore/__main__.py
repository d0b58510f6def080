"""`python -m undostore ...` runs the command line (which needs click; the library does not)."""

from undostore_cli.entry import main

main()
