"""A script that uses the library and exits without close() prints nothing at interpreter exit
(dulwich's pack finalizers would otherwise complain during teardown)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    from undostore import Workspace
    ws = Workspace(sys.argv[1])            # never closed
    ids = []
    for i in range(25):                    # past the automatic gc (every 20 points)
        with open(sys.argv[1] + "/f%d.txt" % (i % 5), "w") as f:
            f.write("v%d\\n" % i)
        ids.append(ws.snapshot(session="x", label=str(i)).id)
    ws.diff(ids[0], ids[-1], find_renames=True)
    ws.undo("x", confirm=lambda plan: True)
    ws.verify()
    ws.gc(grace_seconds=0)
    for path, mode, sha in ws.store.iter_tree_files(bytes.fromhex(ids[3])):
        ws.store.read_blob(sha)            # dulwich's reader opens packs, left open
    print("done")
""")


def test_no_output_at_interpreter_exit_without_close(tree_factory):
    root = tree_factory({"a.txt": "a"})
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(root)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("done\n", "")
