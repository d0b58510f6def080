"""Git's ignore rules, evaluated exactly as git evaluates them.

A `.gitignore` file becomes one `IgnoreFile`: its patterns are translated to regular expressions
following git's `dir.c` and `wildmatch.c` (comments, trailing-space trimming, `\\` escapes, `!`
negation, `dir/` patterns, anchoring by a slash, `**` components, bracket classes). All patterns of
one file are joined into a single alternation in reverse order, so one regex call finds git's "last
matching pattern" of that file.

Why not pathspec's `GitIgnoreSpec`: its pattern regexes also match every path *below* a matching
folder (`!*/` then matches every file in a sub-folder, `X/**` matches `X/` itself, `dir/` +
`!dir/keep` keeps `dir/keep`), which is right for matching a flat list of files but wrong for a
walk that asks about each entry once and prunes ignored folders, as git does. The tests compare
this module with `git check-ignore` on 312 real-world templates.

Precedence is git's: `.gitignore` files from the deepest folder up to the root, then the root's
`.git/info/exclude`, then the user's global excludes file; the first of those with a matching
pattern decides. A path inside an ignored folder is never seen, because the walk prunes the folder.

git matches bytes, not characters (`?` is one byte, so `caf?` does not match the UTF-8 `café`), so
patterns and paths are compared as "byte strings": `str` holding one character per byte
(`_byte_chars`). ASCII text, by far the common case, is its own byte string and costs nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from typing import NamedTuple

from undostore.platform import IGNORE_CASE_DEFAULT

_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "\\x21-\\x7e", "lower": "a-z", "print": "\\x20-\\x7e",
    "punct": "!-/:-@\\[-`{-~", "space": " \\t\\n\\r\\f\\v", "upper": "A-Z", "xdigit": "0-9a-fA-F",
}


def _byte_chars(text: str) -> str:
    """`text` as one character per byte of its file-system encoding (what git compares)."""
    return text if text.isascii() else os.fsencode(text).decode("latin-1")


def _readable(byte_chars: str) -> str:
    """A pattern's bytes as text for people; bytes that are not UTF-8 stay as surrogates (on
    Windows too, where `os.fsdecode` would raise on them)."""
    if byte_chars.isascii():
        return byte_chars
    return byte_chars.encode("latin-1").decode("utf-8", "surrogateescape")


# How a pattern is tested (git's dir.c): against the base name or the whole relative path, and
# by a literal compare, a prefix or suffix test, or a regex for everything else.
BY_REGEX = "regex"
BY_LITERAL = "literal"       # no wildcard at all: git's no-wildcard compare
BY_SUFFIX = "suffix"         # `*` then a literal: git's PATTERN_FLAG_ENDSWITH
BY_PREFIX = "prefix"         # a literal then `*` (`.*`, `cscope.*`): one startswith


class Pattern(NamedTuple):
    text: str          # the line as written (after trimming), for messages
    negated: bool      # a `!` pattern re-includes
    dir_only: bool     # a trailing `/`: matches folders only
    regex: str         # matches the subject (as byte chars): the base name, or the relative path
    basename: bool = False   # no slash: matched against the base name only (git's NODIR)
    how: str = BY_REGEX
    literal: str = ""        # the literal compared, or the suffix or prefix tested


def _trim_trailing_spaces(line: str) -> str:
    """Drop trailing spaces unless escaped with a backslash (git's trim_trailing_spaces)."""
    end = len(line)
    i = 0
    last_kept = 0
    while i < end:
        ch = line[i]
        if ch == "\\" and i + 1 < end:
            i += 2
            last_kept = i
            continue
        i += 1
        if ch != " ":
            last_kept = i
    return line[:last_kept]


def _bracket(glob: str, i: int) -> tuple[str, int] | None:
    """Translate a `[...]` class starting at glob[i] == '['; None if it is not closed."""
    j = i + 1
    negate = False
    if j < len(glob) and glob[j] in "!^":
        negate = True
        j += 1
    parts: list[str] = []
    first = True
    while j < len(glob):
        ch = glob[j]
        if ch == "]" and not first:
            body = "".join(parts)
            # Under git's WM_PATHNAME a class never matches '/'.
            return (f"[^/{body}]" if negate else f"(?!/)[{body}]"), j + 1
        first = False
        if ch == "[" and glob.startswith("[:", j):
            # wildmatch: the class name runs to the first ']'; without ':' before it, the '['
            # is an ordinary member; with no ']' at all the pattern is broken (see below).
            close = glob.find("]", j + 2)
            if close == -1:
                return None
            if close - 1 >= j + 2 and glob[close - 1] == ":":
                name = glob[j + 2:close - 1]
                if name not in _POSIX_CLASSES:
                    return "(?!)", len(glob)  # git: an unknown class makes the pattern fail
                parts.append(_POSIX_CLASSES[name])
                j = close + 1
                continue
        if ch == "\\" and j + 1 < len(glob):
            j += 1
            ch = glob[j]
        if j + 2 < len(glob) and glob[j + 1] == "-" and glob[j + 2] != "]":
            hi = glob[j + 2]
            hi_end = j + 3
            if hi == "\\" and j + 3 < len(glob):
                hi = glob[j + 3]
                hi_end = j + 4
            if ord(hi) >= ord(ch):
                parts.append(f"{re.escape(ch)}-{re.escape(hi)}")
            else:
                # wildmatch tests the low end as a member before it sees the '-': a reversed
                # range `[z-a]` still matches 'z' (and must not become an empty class).
                parts.append(re.escape(ch))
            j = hi_end
            continue
        parts.append(re.escape(ch))
        j += 1
    return None


def glob_to_regex(glob: str, pathname: bool) -> str:
    """Translate one wildmatch glob. `pathname`: git's WM_PATHNAME (`*` stops at '/')."""
    out: list[str] = []
    i = 0
    n = len(glob)
    while i < n:
        ch = glob[i]
        if ch == "*":
            j = i
            while j < n and glob[j] == "*":
                j += 1
            stars = j - i
            at_start = i == 0 or glob[i - 1] == "/"
            at_end = j == n or glob[j] == "/"
            if pathname and stars >= 2 and at_start and at_end:
                if j == n:
                    out.append(".*")  # trailing `/**` (or a lone `**`): everything inside
                    i = j
                elif i == 0 or glob[i - 1] == "/":
                    out.append("(?:.*/)?")  # `**/`: zero or more folders
                    i = j + 1
                continue
            out.append("[^/]*" if pathname else ".*")
            i = j
        elif ch == "?":
            out.append("[^/]" if pathname else ".")
            i += 1
        elif ch == "[":
            translated = _bracket(glob, i)
            if translated is None:
                return "(?!)"  # git: an unclosed '[' aborts the match, so the pattern never matches
            else:
                out.append(translated[0])
                i = translated[1]
        elif ch == "\\":
            if i + 1 == n:
                return "(?!)"  # git: a trailing backslash never matches
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)


def parse_line(line: str) -> Pattern | None:
    """One `.gitignore` line as a Pattern, or None for blanks and comments."""
    return _parse_byte_line(_byte_chars(line))


def _parse_byte_line(line: str) -> Pattern | None:
    if line.endswith("\r"):
        line = line[:-1]
    if not line or line.startswith("#"):
        return None
    text = _trim_trailing_spaces(line)
    if not text:
        return None
    negated = text.startswith("!")
    body = text[1:] if negated else text
    dir_only = body.endswith("/")
    if dir_only:
        body = body[:-1]
    if not body:
        return None
    basename = "/" not in body
    if not basename and body.startswith("/"):
        body = body[1:]   # anchored: relative to the ignore file's folder; '/' only marks that
    how, literal = _simple_form(body)
    return Pattern(text=_readable(text), negated=negated, dir_only=dir_only,
                   regex=glob_to_regex(body, pathname=True), basename=basename, how=how,
                   literal=literal)


_WILDCARDS = frozenset("*?[\\")


def _simple_form(glob: str) -> tuple[str, str]:
    """(how the pattern can be tested without a regex, the literal it is tested with): git's
    no-wildcard compare and ENDSWITH, plus a prefix test for `literal*`."""
    if _WILDCARDS.isdisjoint(glob):
        return BY_LITERAL, glob
    if glob.startswith("*") and len(glob) > 1 and _WILDCARDS.isdisjoint(glob[1:]):
        return BY_SUFFIX, glob[1:]
    if (glob.endswith("*") and len(glob) > 1 and _WILDCARDS.isdisjoint(glob[:-1])
            and "/" not in glob):
        return BY_PREFIX, glob[:-1]
    return BY_REGEX, ""


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _fold(text: str) -> str:
    """ASCII letters folded to lower case (git folds ASCII only; the text is byte chars)."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


class _Index:
    """One ignore file's patterns for files or for folders, sorted by how each is tested.

    Each part answers with the highest index of a pattern of its own that matches, so the
    highest of their answers is git's last matching pattern; a part whose best possible index
    cannot beat the answer so far is not asked (most paths never reach a regex)."""

    __slots__ = ("names", "paths", "suffixes", "dot_suffixes", "prefixes", "name_regex",
                 "name_regex_top", "path_regex", "path_regex_top", "fold")

    def __init__(self, patterns: list[Pattern], dirs: bool, fold: bool) -> None:
        self.fold = fold
        self.names: dict[str, int] = {}          # base-name literals
        self.paths: dict[str, int] = {}          # relative-path literals
        self.dot_suffixes: dict[str, int] = {}   # `*.ext`: looked up from each dot of a name
        self.suffixes: list[tuple[int, str]] = []   # other `*text`, highest index first
        self.prefixes: list[tuple[int, str]] = []   # `text*`, highest index first
        name_regexes: list[tuple[int, str]] = []
        path_regexes: list[tuple[int, str]] = []
        for index, pattern in enumerate(patterns):
            if pattern.dir_only and not dirs:
                continue
            literal = _fold(pattern.literal) if fold else pattern.literal
            if pattern.how == BY_LITERAL:
                (self.names if pattern.basename else self.paths)[literal] = index
            elif pattern.basename and pattern.how == BY_SUFFIX:
                if literal.startswith("."):
                    self.dot_suffixes[literal] = index
                else:
                    self.suffixes.append((index, literal))
            elif pattern.basename and pattern.how == BY_PREFIX:
                self.prefixes.append((index, literal))
            else:
                (name_regexes if pattern.basename else path_regexes).append(
                    (index, pattern.regex))
        self.suffixes.reverse()
        self.prefixes.reverse()
        self.name_regex, self.name_regex_top = _alternation(name_regexes)
        self.path_regex, self.path_regex_top = _alternation(path_regexes)

    def best(self, relpath: str, name: str) -> int:
        """The highest index of a matching pattern, or -1 (`name`: the base name)."""
        if self.fold:
            relpath, name = _fold(relpath), _fold(name)
        best = self.names.get(name, -1)
        if self.paths:
            best = max(best, self.paths.get(relpath, -1))
        if self.dot_suffixes:
            dot = name.find(".")
            while dot != -1:
                best = max(best, self.dot_suffixes.get(name[dot:], -1))
                dot = name.find(".", dot + 1)
        for index, suffix in self.suffixes:
            if index <= best:
                break
            if name.endswith(suffix):
                best = index
                break
        for index, prefix in self.prefixes:
            if index <= best:
                break
            if name.startswith(prefix):
                best = index
                break
        if self.name_regex_top > best:
            m = self.name_regex.fullmatch(name)  # type: ignore[union-attr]
            if m is not None:
                best = max(best, int(m.lastgroup[1:]))  # type: ignore[index]
        if self.path_regex_top > best:
            m = self.path_regex.fullmatch(relpath)  # type: ignore[union-attr]
            if m is not None:
                best = max(best, int(m.lastgroup[1:]))  # type: ignore[index]
        return best


def _alternation(regexes: list[tuple[int, str]]) -> tuple[re.Pattern[str] | None, int]:
    """One regex for several patterns, the last one first, so a match names the highest
    index that matches; and that highest index (-1: none)."""
    if not regexes:
        return None, -1
    body = "|".join(f"(?P<p{index}>{regex})" for index, regex in reversed(regexes))
    # re.ASCII: git folds case for ASCII letters only (and the text here is bytes).
    flags = re.DOTALL | re.ASCII | (re.IGNORECASE if IGNORE_CASE_DEFAULT else 0)
    return re.compile(body, flags), regexes[-1][0]


class IgnoreFile:
    """The patterns of one ignore file, applying to paths below `base` ('' for the root).

    Nothing is compiled until a path is asked about: a walk that reuses a folder's cached
    listing never pays for the ignore files above it."""

    __slots__ = ("base", "source", "patterns", "_indexes", "_base_skip")

    def __init__(self, base: str, patterns: list[Pattern], source: str = "") -> None:
        self.base = base
        # How many byte chars of a root-relative path to drop to make it relative to `base`.
        self._base_skip = len(_byte_chars(base)) + 1 if base else 0
        self.source = source
        self.patterns = patterns
        self._indexes: tuple[_Index, _Index] | None = None   # (files, folders), when asked

    def _index(self, is_dir: bool) -> _Index:
        indexes = self._indexes
        if indexes is None:
            indexes = self._indexes = (_Index(self.patterns, False, IGNORE_CASE_DEFAULT),
                                       _Index(self.patterns, True, IGNORE_CASE_DEFAULT))
        return indexes[1] if is_dir else indexes[0]

    @classmethod
    def from_lines(cls, lines: Iterable[str], base: str = "", source: str = "") -> IgnoreFile:
        patterns = [p for p in map(parse_line, lines) if p is not None]
        return cls(base, patterns, source)

    @classmethod
    def from_bytes(cls, data: bytes, base: str = "", source: str = "") -> IgnoreFile:
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]  # git skips a UTF-8 BOM
        text = data.decode("latin-1")  # one char per byte: git matches bytes
        patterns = [p for p in map(_parse_byte_line, text.split("\n")) if p is not None]
        return cls(base, patterns, source)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def match(self, relpath: str, is_dir: bool) -> Pattern | None:
        """The last pattern matching `relpath` (relative to `base`), or None."""
        wire = _byte_chars(relpath)
        return self._match_byte_chars(wire, wire[wire.rfind("/") + 1:], is_dir)

    def _match_byte_chars(self, relpath: str, name: str, is_dir: bool) -> Pattern | None:
        best = self._index(is_dir).best(relpath, name)
        return self.patterns[best] if best >= 0 else None


class IgnoreRules:
    """The ignore files in force for one folder: per-folder files deepest first, then the rest;
    `top`, the root's `.undostoreignore`, is asked first and can only leave out more."""

    __slots__ = ("_files", "_top")

    def __init__(self, files: tuple[IgnoreFile, ...], top: IgnoreFile | None = None) -> None:
        self._files = files  # in the order git consults them
        self._top = top or None

    def __bool__(self) -> bool:
        return bool(self._files) or self._top is not None

    def with_folder_file(self, ignore_file: IgnoreFile | None) -> IgnoreRules:
        """Rules for a sub-folder whose own `.gitignore` is `ignore_file`."""
        if not ignore_file:
            return self
        return IgnoreRules((ignore_file, *self._files), self._top)

    def is_ignored(self, relpath: str, is_dir: bool) -> bool:
        """Whether `relpath` (relative to the root) is left out, its parent folders being kept:
        by `.undostoreignore`, else as git decides."""
        wire = _byte_chars(relpath)
        name = wire[wire.rfind("/") + 1:]
        if self._top is not None:
            pattern = self._top._match_byte_chars(wire, name, is_dir)
            if pattern is not None and not pattern.negated:
                return True
        for ignore_file in self._files:
            rel = wire[ignore_file._base_skip:]
            # `rel` ends with `name` for a path below the file's folder, the walk's only case.
            own = name if len(rel) >= len(name) else rel[rel.rfind("/") + 1:]
            pattern = ignore_file._match_byte_chars(rel, own, is_dir)
            if pattern is not None:
                return not pattern.negated
        return False


# --- the files git reads besides per-folder .gitignore -------------------------------------------


def _read_optional(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
        return None


_SECTION = r'^\s*\[\s*([A-Za-z0-9.-]+)(\s+"(?:[^"\\]|\\.)*")?\s*\]\s*(.*)$'
_KEY_VALUE = r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*?))?\s*$"


def _config_value(raw: str) -> str:
    """Unquote a git config value (quotes, backslash escapes, trailing comments)."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == '"':
            quoted = not quoted
        elif ch == "\\" and i + 1 < len(raw):
            i += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i], raw[i]))
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out).strip()


def config_excludes_file(config_text: str) -> str | None:
    """The `core.excludesFile` set in one git config file's text, if any (last one wins)."""
    section = ""
    found: str | None = None
    for line in config_text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        m = re.match(_SECTION, stripped)
        if m:
            # `[core "x"]` is the section core.x, not core: its keys are not core's.
            section = m.group(1).lower() if m.group(2) is None else ""
            stripped = m.group(3).strip()
            if not stripped:
                continue
        if section != "core":
            continue
        kv = re.match(_KEY_VALUE, stripped)
        if kv and kv.group(1).lower() == "excludesfile" and kv.group(2) is not None:
            found = _config_value(kv.group(2))
    return found


def _config_path(value: str, root: str) -> str:
    """A path-valued config setting as git opens it: `~` and `~user` expanded, and a relative
    path taken from the top of the work tree (git runs from there)."""
    if value.startswith("~"):
        value = os.path.expanduser(value)
    return os.path.join(root, value)


def git_common_dir(root: str) -> str | None:
    """The git folder whose `info/exclude` and `config` git reads for the work tree `root`.

    That is `root/.git`, or where a `.git` file points (`gitdir: ...`, as in linked worktrees and
    submodules), then its `commondir` if it has one (worktrees share the main repository's)."""
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        git_dir = dot_git
    else:
        data = _read_optional(dot_git)
        if data is None or not data.startswith(b"gitdir:"):
            return None
        git_dir = os.path.join(root, os.fsdecode(data[len(b"gitdir:"):].strip()))
    common = _read_optional(os.path.join(git_dir, "commondir"))
    if common is not None and common.strip():
        git_dir = os.path.join(git_dir, os.fsdecode(common.strip()))
    return git_dir


def _xdg_config_home() -> str:
    return os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")


def git_config_files(root: str) -> list[str]:
    """The git config files git would read for `root`, in order (system, global, repository)."""
    xdg = _xdg_config_home()
    configs: list[str] = []
    if not os.environ.get("GIT_CONFIG_NOSYSTEM"):
        configs.append(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    configs += [os.path.join(xdg, "git", "config"), os.path.join(os.path.expanduser("~"),
                                                                 ".gitconfig")]
    if os.environ.get("GIT_CONFIG_GLOBAL"):
        configs[-2:] = [os.environ["GIT_CONFIG_GLOBAL"]]
    common_dir = git_common_dir(root)
    if common_dir is not None:
        configs.append(os.path.join(common_dir, "config"))
    return configs


def global_excludes_path(root: str) -> str | None:
    """Where git would read the user's global excludes for `root`, without running git."""
    xdg = _xdg_config_home()
    chosen: str | None = None
    for config in git_config_files(root):
        data = _read_optional(config)
        if data is None:
            continue
        value = config_excludes_file(data.decode("utf-8", "surrogateescape"))
        if value is not None:
            chosen = value
    if chosen is None:
        return os.path.join(xdg, "git", "ignore")
    return _config_path(chosen, root) if chosen else None


def read_ignore_file(path: str, base: str = "", follow_symlinks: bool = True) -> IgnoreFile | None:
    """An ignore file read from disk; None if absent. In-tree files are not followed if links."""
    if not follow_symlinks:
        try:
            if os.path.islink(path):
                return None  # git (2.32+) does not follow a symlinked in-tree .gitignore
        except OSError:
            return None
    data = _read_optional(path)
    if data is None:
        return None
    ignore_file = IgnoreFile.from_bytes(data, base, source=path)
    return ignore_file or None


UNDOSTORE_IGNORE = ".undostoreignore"


def undostore_ignore(root: str) -> IgnoreFile | None:
    """The root's `.undostoreignore`: gitignore syntax, for files (even ones git tracks) that
    undo leaves alone, such as a log a server keeps writing. None when absent or empty."""
    return read_ignore_file(os.path.join(root, UNDOSTORE_IGNORE), follow_symlinks=False)


def excluded_by(top: IgnoreFile | None, relpath: str) -> bool:
    """Whether `.undostoreignore` (`top`) leaves out the file `relpath` or a folder above it."""
    if top is None:
        return False
    parts = relpath.split("/")
    for depth in range(1, len(parts) + 1):
        pattern = top.match("/".join(parts[:depth]), depth < len(parts))
        if pattern is not None and not pattern.negated:
            return True
    return False


def root_rules(root: str) -> IgnoreRules:
    """The rules that apply before any per-folder `.gitignore`: info/exclude, global excludes,
    and on top of them the root's `.undostoreignore`."""
    files: list[IgnoreFile] = []
    common_dir = git_common_dir(root)
    info_exclude = None
    if common_dir is not None:
        info_exclude = read_ignore_file(os.path.join(common_dir, "info", "exclude"))
    if info_exclude:
        files.append(info_exclude)
    global_path = global_excludes_path(root)
    if global_path:
        global_file = read_ignore_file(global_path)
        if global_file:
            files.append(global_file)
    return IgnoreRules(tuple(files), undostore_ignore(root))


def ignore_fingerprint(root: str) -> bytes:
    """A digest of every ignore source outside the walked `.gitignore` files: a change to any
    of them may change what is kept anywhere, so the cache's picture no longer holds."""
    sources = [os.path.join(root, UNDOSTORE_IGNORE), *git_config_files(root)]
    common = git_common_dir(root)
    if common is not None:
        sources.append(os.path.join(common, "info", "exclude"))
    excludes = global_excludes_path(root)
    if excludes:
        sources.append(excludes)
    digest = hashlib.sha1()
    for path in sources:
        digest.update(os.fsencode(path) + b"\0")
        try:
            with open(path, "rb") as f:
                digest.update(b"+" + hashlib.sha1(f.read()).digest())
        except OSError:
            digest.update(b"-")
    return digest.digest()
