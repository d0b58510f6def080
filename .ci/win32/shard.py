"""Split the test files into shards of about equal time under Wine; print one shard's files,
as `tests/NAME` (the Windows Python runs in the repository).

    python shard.py TESTS_DIR WEIGHTS_FILE SHARDS INDEX

WEIGHTS_FILE holds "seconds file" lines measured in the Windows lane (a file not listed
weighs DEFAULT_S). Files go, heaviest first, to the shard with the least time so far; ties
by name, so every run of the same checkout splits alike and each file runs in one shard.
"""

import os
import sys

DEFAULT_S = 4.0


def load_weights(path: str) -> dict[str, float]:
    weights: dict[str, float] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                seconds, name = line.split()
                weights[name] = float(seconds)
    return weights


def split(files: list[str], weights: dict[str, float], shards: int) -> list[list[str]]:
    loads = [0.0] * shards
    out: list[list[str]] = [[] for _ in range(shards)]
    for name in sorted(files, key=lambda n: (-weights.get(n, DEFAULT_S), n)):
        lightest = min(range(shards), key=lambda i: (loads[i], i))
        out[lightest].append(name)
        loads[lightest] += weights.get(name, DEFAULT_S)
    return [sorted(shard) for shard in out]


def main(argv: list[str]) -> int:
    tests_dir, weights_file, shards, index = argv[0], argv[1], int(argv[2]), int(argv[3])
    files = [n for n in os.listdir(tests_dir) if n.startswith("test_") and n.endswith(".py")]
    for name in split(files, load_weights(weights_file), shards)[index]:
        print(f"tests/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
