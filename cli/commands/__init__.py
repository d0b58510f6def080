"""The commands click runs, one module per family of commands."""
