"""How often a 3-way merge agrees with `git merge-file -p` on generated cases.

    python benchmarks/merge_oracle.py [N] [SEED]

Compares undostore's `undostore.diff.merge.merge_text` and, when installed, the PyPI package
`merge3` (with and without its `reprocess` step) against git on N random base/ours/theirs triples
(ours and theirs are random edits of base; small alphabets so edits collide). Prints, per
engine, how many outputs are byte-identical to git's and how many agree on clean vs conflict.
Runs git; for development only (the library never runs git).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from undostore.diff.linediff import split_lines  # noqa: E402
from undostore.diff.merge import merge_text  # noqa: E402

ALPHABET = [b"a", b"b", b"c", b"d", b"{", b"}", b"", b"x = 1", b"  return"]


def _mutate(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    out = list(lines)
    for _ in range(rng.randint(0, 3)):
        op = rng.choice("idr")
        at = rng.randint(0, len(out))
        if op == "i":
            out[at:at] = [rng.choice(ALPHABET) for _ in range(rng.randint(1, 3))]
        elif op == "d" and out:
            del out[at:at + rng.randint(1, 3)]
        elif out:
            out[min(at, len(out) - 1)] = rng.choice(ALPHABET) + b"!"
    return out


def _join(rng: random.Random, lines: list[bytes], eol: bytes) -> bytes:
    data = b"".join(line + (eol if rng.random() < 0.95 else b"\n") for line in lines)
    return data.rstrip(b"\r\n") if data and rng.random() < 0.2 else data


def case(rng: random.Random) -> tuple[bytes, bytes, bytes]:
    base = [rng.choice(ALPHABET) for _ in range(rng.randint(0, 12))]
    eol = b"\r\n" if rng.random() < 0.2 else b"\n"
    return (_join(rng, base, eol), _join(rng, _mutate(rng, base), eol),
            _join(rng, _mutate(rng, base), eol))


def git_merge(tmp: str, base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, int]:
    names = []
    for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        names.append(path)
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, HOME=tmp)
    proc = subprocess.run(["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs",
                           *names], capture_output=True, env=env, cwd=tmp)
    return proc.stdout, proc.returncode


def merge3_merge(base: bytes, ours: bytes, theirs: bytes, reprocess: bool) -> tuple[bytes, int]:
    import merge3

    if not (base or ours or theirs):
        return b"", 0   # merge3 cannot tell bytes from str with no line at all
    m = merge3.Merge3(split_lines(base), split_lines(ours), split_lines(theirs))
    out = b"".join(m.merge_lines(name_a=b"ours", name_b=b"theirs", reprocess=reprocess))
    conflicts = sum(1 for g in m.merge_groups() if g[0] == "conflict")
    return out, conflicts


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    if shutil.which("git") is None:
        sys.exit("git not found")
    try:
        import merge3  # noqa: F401
        engines = ["undostore", "merge3", "merge3+reprocess"]
    except ImportError:
        engines = ["undostore"]
    same = dict.fromkeys(engines, 0)
    verdict = dict.fromkeys(engines, 0)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(n):
            base, ours, theirs = case(rng)
            want, code = git_merge(tmp, base, ours, theirs)
            for engine in engines:
                if engine == "undostore":
                    got = merge_text(base, ours, theirs, "ours", "theirs")
                    data, conflicts = got.data, got.conflicts
                else:
                    data, conflicts = merge3_merge(base, ours, theirs, "reprocess" in engine)
                same[engine] += data == want
                verdict[engine] += (conflicts == 0) == (code == 0)
                if engine == "undostore" and (data != want or conflicts != code):
                    print("differs:", base, ours, theirs, want, data, code, conflicts)
    for engine in engines:
        print(f"{engine:18} identical to git: {same[engine]}/{n}   "
              f"same clean/conflict verdict: {verdict[engine]}/{n}")


if __name__ == "__main__":
    main()
