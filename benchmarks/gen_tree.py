"""Deterministic benchmark trees: the same seed always gives the same paths and the same bytes.

Shapes (all text-like content built from a fixed vocabulary of code-ish lines, so it compresses
like source code, and each file starts with its own path so no two files share content):

- `make_tree`: N small files spread evenly over ~M folders nested with a fan-out of 10 (the
  reference shape: 20,000 files in 1,000 folders; 100,000 files in 5,000 folders for the big one).
- `make_big_file_tree`: one folder holding a single large file (default 1 GiB), written in 1 MiB
  chunks so neither the generator nor anything else has to hold it in memory.
- `make_node_modules_tree`: a small kept tree plus an ignored `node_modules/` of 50,000 files and a
  root `.gitignore` naming it (an undo engine must prune it, not list it).
- `make_c_project_tree`: a kernel-like C tree (80,000 files, 5,000 folders, 300 `.gitignore`
  files and a root one of ~150 patterns) with the build outputs those ignore lying beside the
  sources (`.o`, hidden `.*.cmd`, `*.mod.c`, `vmlinux*`, `include/generated/`).

`ensure(...)` regenerates a shape only when the marker file next to it (`<path>.gen.json`) does
not record the same parameters, so `--keep`/`--workdir` runs can reuse big trees. Anything that
modifies a tree (the one-change benchmark) calls `forget(path)` first, and `restored(path)` once
it has put the original bytes back.

    python benchmarks/gen_tree.py tree /tmp/t20k --files 20000 --folders 1000
    python benchmarks/gen_tree.py big-file /tmp/big --size 1073741824
    python benchmarks/gen_tree.py node-modules /tmp/nm
    python benchmarks/gen_tree.py c-project /tmp/c80k
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

DEFAULT_SEED = 20261129
DEFAULT_SIZE = 2048            # mean file size in bytes (log-normal spread, median ~1.2 KB)
FAN_OUT = 10
BIG_FILE_NAME = "big.dat"
CHUNK = 1 << 20

_TOKEN_TEXT = (
    "def class return import from self if else elif for while in not and or None True False "
    "const let var function async await export default yield lambda try except finally raise "
    "value result items index count config path name data buffer options state error message "
    "request response handler context session store cache tree blob node parent child key map "
    "list dict set tuple int str bytes len range print open read write close flush append "
    "= == != <= >= + - * / % ( ) [ ] { } : , . -> => # // /* */ 0 1 2 10 42 100 1024"
)
_TOKENS = _TOKEN_TEXT.split()


@dataclass(frozen=True)
class TreeInfo:
    """What a generator made: counts of kept files (and ignored ones), folders and bytes."""

    shape: str
    path: str
    files: int
    folders: int
    bytes: int
    ignored_files: int = 0
    seed: int = DEFAULT_SEED


def _line_corpus(rng: random.Random, count: int = 4096) -> list[bytes]:
    """Code-like lines: an indent, 2 to 12 tokens, a newline."""
    lines = []
    for _ in range(count):
        indent = b"    " * rng.randint(0, 3)
        words = rng.choices(_TOKENS, k=rng.randint(2, 12))
        lines.append(indent + " ".join(words).encode("ascii") + b"\n")
    return lines


def _text(rng: random.Random, corpus: list[bytes], size: int, header: bytes = b"") -> bytes:
    """`size` bytes of text (exactly, unless the header alone is longer)."""
    if size <= len(header):
        return header[:size] if size else b""
    need = size - len(header)
    body = b"".join(rng.choices(corpus, k=need // 24 + 2))  # lines average ~40 bytes
    while len(body) < need:
        body += b"".join(rng.choices(corpus, k=need // 24 + 2))
    return header + body[:need]


def _file_size(rng: random.Random, mean: int) -> int:
    """Log-normal sizes with the given mean (sigma 1): mostly small, a few tens of KB."""
    if mean <= 0:
        return 0
    mu = math.log(mean) - 0.5
    return min(int(rng.lognormvariate(mu, 1.0)), mean * 64)


def _folder_paths(count: int, rng: random.Random) -> list[str]:
    """`count` nested folder paths ('' is the root, not counted); parents come first."""
    stems = ("src", "lib", "core", "util", "api", "tests", "docs", "pkg", "app", "models")
    paths = [""]
    for k in range(1, count + 1):
        parent = paths[(k - 1) // FAN_OUT]
        name = f"{rng.choice(stems)}_{k:05d}"
        paths.append(f"{parent}/{name}" if parent else name)
    return paths


def _check_empty(path: str) -> None:
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise FileExistsError(f"{path}: exists and is not an empty folder; refusing to overwrite")
    os.makedirs(path, exist_ok=True)


def _write_files(root: str, folders: list[str], files: int, size: int, rng: random.Random,
                 corpus: list[bytes], seed: int) -> int:
    """Spread `files` files round-robin over `folders`; returns the bytes written."""
    exts = (".py", ".js", ".ts", ".md", ".txt", ".json", ".c", ".h", ".rs", ".go")
    stems = ("index", "util", "model", "view", "test", "main", "config", "helpers", "types")
    total = 0
    for i in range(files):
        folder = folders[i % len(folders)]
        executable = i % 97 == 5           # ~1% scripts with the exec bit
        ext = ".sh" if executable else rng.choice(exts)
        name = f"{rng.choice(stems)}_{i:06d}{ext}"
        rel = f"{folder}/{name}" if folder else name
        header = f"# {rel} seed={seed}\n".encode()
        size_i = 0 if i % 499 == 7 else max(_file_size(rng, size), len(header))  # a few empty
        data = _text(rng, corpus, size_i, header)
        disk = os.path.join(root, *rel.split("/"))
        with open(disk, "wb") as f:
            f.write(data)
        if executable:
            os.chmod(disk, 0o755)
        total += len(data)
    return total


def make_tree(path: str, files: int = 20_000, folders: int = 1_000, size: int = DEFAULT_SIZE,
              seed: int = DEFAULT_SEED) -> TreeInfo:
    """`files` small text files in `folders` nested folders under `path` (must be empty/new)."""
    _check_empty(path)
    rng = random.Random(seed)
    corpus = _line_corpus(rng)
    paths = _folder_paths(folders, rng)
    for rel in paths[1:]:
        os.mkdir(os.path.join(path, *rel.split("/")))
    written = _write_files(path, paths, files, size, rng, corpus, seed)
    return TreeInfo("tree", path, files, folders, written, seed=seed)


def make_big_file_tree(path: str, size: int = 1 << 30, seed: int = DEFAULT_SEED) -> TreeInfo:
    """One folder with one `size`-byte text file, written a chunk at a time (constant memory)."""
    _check_empty(path)
    rng = random.Random(seed)
    corpus = _line_corpus(rng)
    left = size
    with open(os.path.join(path, BIG_FILE_NAME), "wb") as f:
        while left > 0:
            block = _text(rng, corpus, min(CHUNK, left))
            f.write(block)
            left -= len(block)
    return TreeInfo("big-file", path, 1, 0, size, seed=seed)


def make_node_modules_tree(path: str, files: int = 2_000, folders: int = 100,
                           ignored_files: int = 50_000, ignored_folders: int = 2_500,
                           size: int = DEFAULT_SIZE, seed: int = DEFAULT_SEED) -> TreeInfo:
    """A small kept tree, plus `node_modules/` (ignored by the root `.gitignore`) holding
    `ignored_files` files in `ignored_folders` package folders."""
    info = make_tree(path, files, folders, size, seed)
    with open(os.path.join(path, ".gitignore"), "wb") as f:
        f.write(b"# dependencies\nnode_modules/\n*.log\n")
    rng = random.Random(seed + 1)
    corpus = _line_corpus(rng, 512)
    modules = os.path.join(path, "node_modules")
    os.mkdir(modules)
    packages = [f"pkg-{k:05d}/lib" if k % 2 else f"pkg-{k:05d}" for k in range(ignored_folders)]
    for rel in packages:
        os.makedirs(os.path.join(modules, *rel.split("/")))
    for i in range(ignored_files):
        rel = f"{packages[i % len(packages)]}/file_{i:06d}.js"
        with open(os.path.join(modules, *rel.split("/")), "wb") as f:
            f.write(_text(rng, corpus, rng.randint(64, 1024), f"// {rel}\n".encode()))
    return TreeInfo("node-modules", path, files + 1, folders, info.bytes,
                    ignored_files=ignored_files, seed=seed)


# --- a C project like a kernel tree: hundreds of .gitignore files, build outputs ignored ------

_C_TOP = ("arch", "drivers", "fs", "net", "include", "kernel", "lib", "mm", "sound", "tools",
          "scripts", "crypto", "security", "block", "Documentation", "samples", "virt", "init")
_C_STEMS = ("core", "main", "dev", "bus", "irq", "dma", "pci", "usb", "gpio", "clk", "phy",
            "spi", "i2c", "hw", "ops", "sysfs", "debug", "init", "table", "probe")
_C_SOURCES = (".c", ".c", ".c", ".h", ".h", ".S", ".rst", ".py", ".txt", ".dts")
# The root .gitignore: the forms a kernel tree's holds (`.*` with negations, `*.o`, `*.[oa]`,
# `*.mod.c`, `/vmlinux*`, `/include/generated/`), padded with more of each to ~150 patterns.
_C_ROOT_IGNORE = """\
# generated by gen_tree.py (c-project): the forms of a kernel tree's root .gitignore
.*
*.a
*.asn1.[ch]
*.bin
*.bz2
*.c.[012]*.*
*.dtb
*.dtbo
*.dtb.S
*.dwo
*.elf
*.gcno
*.gz
*.i
*.ko
*.lex.c
*.ll
*.lst
*.lz4
*.lzma
*.lzo
*.mod
*.mod.c
*.o
*.o.*
*.[oa]
*.patch
*.rmeta
*.rpm
*.rsi
*.s
*.so
*.so.dbg
*.su
*.symtypes
*.symversions
*.tab.[ch]
*.tar
*.xz
*.zst
Module.symvers
modules.order
/linux
/modules-only.symvers
/vmlinux
/vmlinux.32
/vmlinux.map
/vmlinux.symvers
/vmlinux-gdb.py
/vmlinux*
/vmlinuz
/System.map
/Module.markers
/modules.builtin
/modules.builtin.modinfo
/modules.nsdeps
/debian/
/snap/
/tar-install/
/Documentation/output/
/include/config/
/include/generated/
/arch/*/include/generated/
/scripts/gen_*
/tools/objtool/fixdep*
!.gitignore
!.get_maintainer.ignore
!.gitattributes
!.mailmap
!.rustfmt.toml
!.clang-format
!.cocciconfig
!.kunitconfig
!.editorconfig
!.vmlinux.export.c
*.orig
*~
\\#*#
/tags
/TAGS
GPATH
GRTAGS
GSYMS
GTAGS
ID
*.tmp
*.swp
*.swo
*.bak
*.rej
*.log
cscope.*
ncscope.*
/compile_commands.json
/rust-project.json
/certs/signing_key.pem
/certs/signing_key.x509
/certs/x509.genkey
/kernel.spec
/rpmbuild/
/.tmp_versions/
**/__pycache__/
*.pyc
*.pyo
*.egg-info/
core
!core/
/build-*/
/out/
/allno.config
/allyes.config
/allmod.config
/alldef.config
/allrandom.config
*.gcda
*.gcov
*.profraw
*.lds
!*.lds.S
*.mod.o
*.ko.*
*.order
*.ver
*.sym
*.cmd
*.d
*.dep
*.depend
*.[12345678]
!Documentation/*.[12345678]
*.dvi
*.pdf
*.ps
*.aux
*.toc
*.html
*.epub
*.latex
*.texi
*.info
*.man
/Documentation/DocBook/*.xml
/Documentation/DocBook/media/
*.y.c
*.l.c
*.lex.[ch]
*.opt.yaml
*.json.tmp
/usr/include/
/usr/initramfs_data.cpio*
/security/apparmor/*.h
/lib/crc*table.h
/arch/*/boot/*Image*
/arch/*/boot/compressed/vmlinux*
"""


def _c_folders(count: int, rng: random.Random) -> list[str]:
    """Kernel-like nested folders: the top folders, then a fan-out of 8 under them."""
    paths = [""] + list(_C_TOP)
    k = 0
    while len(paths) < count + 1:
        parent = paths[1 + k // 8] if 1 + k // 8 < len(paths) else rng.choice(paths[1:])
        name = f"{rng.choice(_C_STEMS)}{k % 97}" if k % 5 else f"{rng.choice(_C_STEMS)}_{k:04d}"
        rel = f"{parent}/{name}"
        if rel not in paths:
            paths.append(rel)
        k += 1
    return paths


def _c_folder_ignore(rng: random.Random, folder: str) -> bytes:
    """A small per-folder .gitignore as the kernel's sub-folders hold (tool binaries, generated
    sources, a negation or two)."""
    stem = folder.rpartition("/")[2] or "root"
    lines = [f"# {folder}", f"/{stem}_gen", f"/{stem}_tool", "*.tmp" if rng.random() < .5
             else "*.out", f"/generated_{stem}.h"]
    if rng.random() < 0.3:
        lines += ["!keep_*.o", f"{stem}.lds"]
    if rng.random() < 0.2:
        lines += ["/out/", "fixdep"]
    return ("\n".join(lines) + "\n").encode()


def make_c_project_tree(path: str, files: int = 80_000, folders: int = 5_000,
                        gitignores: int = 300, size: int = DEFAULT_SIZE,
                        seed: int = DEFAULT_SEED) -> TreeInfo:
    """A kernel-like C tree: `files` kept sources in `folders` folders, `gitignores` per-folder
    `.gitignore` files and a root one of ~150 patterns, and the build outputs they ignore (an
    `.o` and a hidden `.*.cmd` beside most `.c` files, `*.mod.c`, `/vmlinux*`,
    `/include/generated/`)."""
    _check_empty(path)
    rng = random.Random(seed)
    corpus = _line_corpus(rng)
    paths = _c_folders(folders, rng)
    for rel in paths[1:]:
        os.makedirs(os.path.join(path, *rel.split("/")), exist_ok=True)
    with open(os.path.join(path, ".gitignore"), "wb") as f:
        f.write(_C_ROOT_IGNORE.encode())
    for folder in rng.sample(paths[1:], min(gitignores, len(paths) - 1)):
        with open(os.path.join(path, *folder.split("/"), ".gitignore"), "wb") as f:
            f.write(_c_folder_ignore(rng, folder))
    total = 0
    ignored = 0
    kept = 0
    for i in range(files):
        folder = paths[1 + i % (len(paths) - 1)]
        stem = f"{rng.choice(_C_STEMS)}_{i:06d}"
        ext = "" if i % 53 == 0 else rng.choice(_C_SOURCES)
        name = ("Makefile" if i % 53 == 0 and i % 2 else "Kconfig" if i % 53 == 0
                else stem + ext)
        rel = f"{folder}/{name}"
        disk = os.path.join(path, *rel.split("/"))
        if os.path.exists(disk):
            name = stem + ".c"
            rel, disk = f"{folder}/{name}", os.path.join(path, *folder.split("/"), name)
        header = f"/* {rel} seed={seed} */\n".encode()
        data = _text(rng, corpus, max(_file_size(rng, size), len(header)), header)
        with open(disk, "wb") as f:
            f.write(data)
        total += len(data)
        kept += 1
        if ext == ".c" and i % 3:   # built: its object and its hidden command file
            for out in (stem + ".o", f".{stem}.o.cmd"):
                with open(os.path.join(path, *folder.split("/"), out), "wb") as f:
                    f.write(b"\x7fELF" + data[:200])
                ignored += 1
            if i % 17 == 0:
                with open(os.path.join(path, *folder.split("/"), stem + ".mod.c"), "wb") as f:
                    f.write(b"/* generated */\n")
                ignored += 1
    kept += 1 + min(gitignores, len(paths) - 1)
    generated = os.path.join(path, "include", "generated")
    os.makedirs(generated, exist_ok=True)
    for n in range(200):
        with open(os.path.join(generated, f"autoconf_{n}.h"), "wb") as f:
            f.write(b"#define CONFIG_%d 1\n" % n)
        ignored += 1
    for name in ("vmlinux", "vmlinux.o", "vmlinux.a", "System.map", "modules.order", ".config"):
        with open(os.path.join(path, name), "wb") as f:
            f.write(b"\x7fELF" + name.encode())
        ignored += 1
    return TreeInfo("c-project", path, kept, len(paths) - 1, total, ignored_files=ignored,
                    seed=seed)


SHAPES: dict[str, Callable[..., TreeInfo]] = {
    "c-project": make_c_project_tree,
    "tree": make_tree,
    "big-file": make_big_file_tree,
    "node-modules": make_node_modules_tree,
}


def _marker(path: str) -> str:
    return os.path.normpath(path) + ".gen.json"


def forget(path: str) -> None:
    """Mark a generated tree as modified: `ensure` regenerates it unless `restored` is called."""
    try:
        os.replace(_marker(path), _marker(path) + ".modified")
    except FileNotFoundError:
        pass


def restored(path: str) -> None:
    """The tree `forget` was called on holds its generated bytes again: reuse it."""
    try:
        os.replace(_marker(path) + ".modified", _marker(path))
    except FileNotFoundError:
        pass


def ensure(shape: str, path: str, **params: int) -> TreeInfo:
    """The tree `shape(path, **params)`, reusing an unmodified one generated earlier."""
    wanted = {"shape": shape, **params}
    try:
        with open(_marker(path), encoding="utf-8") as f:
            recorded = json.load(f)
        if recorded.get("params") == wanted and os.path.isdir(path):
            return TreeInfo(**recorded["info"])
    except (OSError, ValueError, TypeError):
        pass
    forget(path)
    try:
        os.unlink(_marker(path) + ".modified")
    except FileNotFoundError:
        pass
    if os.path.exists(path):
        shutil.rmtree(path)
    info = SHAPES[shape](path, **params)
    with open(_marker(path), "w", encoding="utf-8") as f:
        json.dump({"params": wanted, "info": asdict(info)}, f)
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Generate a deterministic benchmark tree (same seed, same bytes).")
    parser.add_argument("shape", choices=sorted(SHAPES),
                        help="tree: small text files in nested folders; big-file: one large "
                             "file; node-modules: small tree + ignored node_modules/")
    parser.add_argument("path", help="folder to create (must not exist or be empty)")
    parser.add_argument("--files", type=int, help="kept files (tree: 20000, node-modules: 2000)")
    parser.add_argument("--folders", type=int, help="folders (tree: 1000, node-modules: 100)")
    parser.add_argument("--size", type=int,
                        help=f"mean file size in bytes (default {DEFAULT_SIZE}); for big-file "
                             "the file's size (default 1 GiB)")
    parser.add_argument("--ignored-files", type=int, help="node-modules: files in node_modules/")
    parser.add_argument("--gitignores", type=int,
                        help="c-project: per-folder .gitignore files (default 300)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    params = {"seed": args.seed}
    for key in ("files", "folders", "size", "ignored_files", "gitignores"):
        value = getattr(args, key)
        if value is not None:
            params[key] = value
    if args.shape == "big-file" and set(params) - {"seed", "size"}:
        parser.error("big-file takes only --size and --seed")
    if args.shape != "node-modules" and "ignored_files" in params:
        parser.error("--ignored-files is for node-modules")
    if args.shape != "c-project" and "gitignores" in params:
        parser.error("--gitignores is for c-project")
    started = time.perf_counter()
    try:
        info = SHAPES[args.shape](args.path, **params)
    except FileExistsError as err:
        print(f"gen_tree: {err}", file=sys.stderr)
        return 1
    print(json.dumps({**asdict(info), "seconds": round(time.perf_counter() - started, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
