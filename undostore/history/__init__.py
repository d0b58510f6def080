"""What the store remembers and for how long: session journals (undo points, redo stack), the
anchor refs that keep their snapshots reachable, undo/redo as restore plus a journal step, gc and
verify. The top layer below the `Workspace` facade."""
