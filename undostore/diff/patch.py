"""The text forms of a diff, byte for byte what `git diff-tree -r` prints for the same two trees.

Forms: `name-status`, `numstat`, `stat` and `patch`. Paths are quoted like git's default
(core.quotePath): a name with a control character, `"`, `\\` or any byte >= 0x80 is written in
double quotes with C escapes and octal bytes, so any file name (not UTF-8 included) prints as
ASCII. A file is binary when its first 8,000 bytes hold a NUL, as in git. Colours are git's
defaults (meta bold, hunk headers cyan, removed red, added green, whitespace errors in added lines
on red); the caller decides when to use them.

Reading blobs is this module's job, not `diff.py`'s: only the forms that need line counts or
content read them.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from undostore.diff.content import (
    BinaryBlob,
    Blobs,
    count_lines,
    counts_of,
    is_binary,
    line_counts,
    read_side,
)
from undostore.diff.linediff import diff_lines, function_line, hunks, split_lines

if TYPE_CHECKING:
    from undostore.diff.change import Change
    from undostore.diff.linediff import Edit, Hunk
    from undostore.git.packindex import PackIndexFile
    from undostore.store.store import Store

FORMS = ("name-only", "name-status", "numstat", "stat", "patch")
MIN_ABBREV = 7
_TYPE_MASK = 0o170000
_NULL_HEX = "0" * 40


# --- quoting (git's quote_c_style with core.quotePath=true) ----------------------------------

_MUST_QUOTE = re.compile(rb'[\x00-\x1f"\\\x7f-\xff]')
_ESCAPES = {7: b"\\a", 8: b"\\b", 9: b"\\t", 10: b"\\n", 11: b"\\v", 12: b"\\f", 13: b"\\r",
            34: b'\\"', 92: b"\\\\"}


def _escape(name: bytes) -> bytes:
    out = bytearray()
    for c in name:
        if c < 0x20 or c == 0x22 or c == 0x5C or c >= 0x7F:
            out += _ESCAPES.get(c) or b"\\%03o" % c
        else:
            out.append(c)
    return bytes(out)


def quote_path(name: bytes) -> bytes:
    """`name` as git prints it: unchanged, or in double quotes with C escapes."""
    if not _MUST_QUOTE.search(name):
        return name
    return b'"' + _escape(name) + b'"'


def _quote_two(prefix: bytes, name: bytes) -> bytes:
    if not _MUST_QUOTE.search(prefix + name):
        return prefix + name
    return b'"' + _escape(prefix) + _escape(name) + b'"'


def _fs(path: str) -> bytes:
    return os.fsencode(path)


def rename_label(old: bytes, new: bytes) -> bytes:
    """git's `old => new` label for a rename, with the common folders outside braces."""
    if _MUST_QUOTE.search(old) or _MUST_QUOTE.search(new):
        return quote_path(old) + b" => " + quote_path(new)
    prefix = 0
    i = 0
    while i < len(old) and i < len(new) and old[i] == new[i]:
        if old[i] == 0x2F:
            prefix = i + 1
        i += 1
    suffix = 0
    slack = 1 if prefix else 0
    oi, ni = len(old), len(new)
    while (prefix - slack <= oi and prefix - slack <= ni
           and (old[oi] if oi < len(old) else 0) == (new[ni] if ni < len(new) else 0)):
        if oi < len(old) and old[oi] == 0x2F:
            suffix = len(old) - oi
        oi -= 1
        ni -= 1
    old_mid = max(len(old) - prefix - suffix, 0)
    new_mid = max(len(new) - prefix - suffix, 0)
    middle = old[prefix:prefix + old_mid] + b" => " + new[prefix:prefix + new_mid]
    if prefix + suffix:
        return old[:prefix] + b"{" + middle + b"}" + old[len(old) - suffix:]
    return middle


def _print_name(change: Change) -> bytes:
    if change.old_path is not None:
        return rename_label(_fs(change.old_path), _fs(change.path))
    return quote_path(_fs(change.path))


# --- colours ---------------------------------------------------------------------------------


class Colors(NamedTuple):
    """Escape sequences for each part of the output; all empty for plain output."""

    reset: bytes = b""
    meta: bytes = b""
    frag: bytes = b""
    old: bytes = b""
    new: bytes = b""
    whitespace: bytes = b""
    context: bytes = b""
    func: bytes = b""

    @property
    def enabled(self) -> bool:
        return bool(self.reset)


PLAIN = Colors()
GIT_COLORS = Colors(reset=b"\033[m", meta=b"\033[1m", frag=b"\033[36m", old=b"\033[31m",
                    new=b"\033[32m", whitespace=b"\033[41m")


def fill_line_counts(store: Store, changes: list[Change]) -> None:
    """Compute the line counts of many changes at once (one pass over the store's packs)."""
    from undostore.git.reader import ObjectReader

    with ObjectReader(store) as reader:
        for change in changes:
            if change.counts_cache is None:
                change.counts_cache = line_counts(reader, change.old_id, change.new_id)


# --- name-status, numstat, stat --------------------------------------------------------------


def name_only(changes: list[Change]) -> bytes:
    """git's `--name-only`: each changed path (a rename's new path), quoted as git quotes it."""
    return b"".join(quote_path(_fs(change.path)) + b"\n" for change in changes)


def name_status(changes: list[Change]) -> bytes:
    lines = []
    for change in changes:
        if change.old_path is not None:
            lines.append(change.status.encode() + b"\t" + quote_path(_fs(change.old_path)) + b"\t"
                         + quote_path(_fs(change.path)) + b"\n")
        else:
            lines.append(change.status.encode() + b"\t" + quote_path(_fs(change.path)) + b"\n")
    return b"".join(lines)


def numstat(changes: list[Change]) -> bytes:
    lines = []
    for change in changes:
        added, removed = change.added, change.removed
        counts = b"-\t-\t" if added is None else b"%d\t%d\t" % (added, removed)
        lines.append(counts + _print_name(change) + b"\n")
    return b"".join(lines)


class _StatFile(NamedTuple):
    name: bytes
    added: int      # lines, or for binary files the new size in bytes
    deleted: int
    binary: bool


def _stat_file(blobs: Blobs, change: Change) -> _StatFile:
    old, new = read_side(blobs, change.old_id), read_side(blobs, change.new_id)
    same = change.old_id == change.new_id
    added, removed = counts_of(old, new, same)
    change.counts_cache = (added, removed)
    if added is None or removed is None:
        sizes = (0, 0) if same else (len(new or b""), len(old or b""))
        return _StatFile(_print_name(change), sizes[0], sizes[1], True)
    return _StatFile(_print_name(change), added, removed, False)


def _scale(it: int, width: int, max_change: int) -> int:
    return 0 if not it else 1 + (it * (width - 1) // max_change)


def stat(blobs: Blobs, changes: list[Change], width: int = 80, colors: Colors = PLAIN) -> bytes:
    """git's `--stat` graph for `width` columns, and its summary line."""
    files = [_stat_file(blobs, change) for change in changes]
    if not files:
        return b""
    max_len = max_change = number_width = bin_width = 0
    for f in files:
        max_len = max(max_len, len(f.name))
        if f.binary:
            bin_width = max(bin_width, 14 + len(str(f.added)) + len(str(f.deleted)))
            number_width = 3
        else:
            max_change = max(max_change, f.added + f.deleted)
    number_width = max(number_width, len(str(max_change)))
    width = max(width, 16 + 6 + number_width)
    graph_width = max_change if max_change + 4 > bin_width else bin_width - 4
    name_width = max_len
    if name_width + number_width + 6 + graph_width > width:
        if graph_width > width * 3 // 8 - number_width - 6:
            graph_width = max(width * 3 // 8 - number_width - 6, 6)
        if name_width > width - number_width - 6 - graph_width:
            name_width = width - number_width - 6 - graph_width
        else:
            graph_width = width - number_width - 6 - name_width

    c = colors
    out = []
    adds = dels = 0
    for f in files:
        name, prefix, room = f.name, b"", name_width
        if name_width < len(name):
            prefix = b"..."
            room = max(room - 3, 0)
            name = name[len(name) - room:] if room else b""
            slash = name.find(b"/")
            if slash >= 0:
                name = name[slash:]
        padding = b" " * max(room - len(name), 0)
        if f.binary:
            line = b" " + prefix + name + padding + b" | " + b"Bin".rjust(number_width)
            if f.added or f.deleted:
                line += (b" " + c.old + b"%d" % f.deleted + c.reset + b" -> " + c.new
                         + b"%d" % f.added + c.reset + b" bytes")
            out.append(line + b"\n")
            continue
        adds += f.added
        dels += f.deleted
        add, delete = f.added, f.deleted
        if graph_width <= max_change:
            total = _scale(add + delete, graph_width, max_change)
            if total < 2 and add and delete:
                total = 2
            if add < delete:
                add = _scale(add, graph_width, max_change)
                delete = total - add
            else:
                delete = _scale(delete, graph_width, max_change)
                add = total - delete
        changed = f.added + f.deleted
        line = (b" " + prefix + name + padding + b" | " + str(changed).rjust(number_width).encode()
                + (b" " if changed else b""))
        if add > 0:
            line += c.new + b"+" * add + c.reset
        if delete > 0:
            line += c.old + b"-" * delete + c.reset
        out.append(line + b"\n")
    out.append(_summary(len(files), adds, dels))
    return b"".join(out)


def _summary(files: int, adds: int, dels: int) -> bytes:
    text = f" {files} file{'s' if files != 1 else ''} changed"
    if adds or not dels:
        text += f", {adds} insertion{'s' if adds != 1 else ''}(+)"
    if dels or not adds:
        text += f", {dels} deletion{'s' if dels != 1 else ''}(-)"
    return text.encode() + b"\n"


# --- patch -----------------------------------------------------------------------------------


class Abbrev:
    """git's automatic abbreviation of ids in `index` lines: at least 7 hex digits (more in a
    big store), extended until no other object in the store shares the prefix.

    Neighbours are looked up in each pack's index; when many ids are wanted from a store with
    many packs, one merged sorted list of every id is cheaper, so it is built instead."""

    def __init__(self, store: Store, expected_ids: int = 0) -> None:
        self.indexes = store.index.indexes()
        count = sum(idx.count for idx in self.indexes)
        self.min_len = max(MIN_ABBREV, (max(count.bit_length(), 1) + 1) // 2)
        self.merged: list[bytes] | None = None
        if expected_ids * len(self.indexes) * 10 > count:
            self.merged = sorted(name for idx in self.indexes for name in idx.names())

    def __call__(self, hex_id: str) -> bytes:
        sha = bytes.fromhex(hex_id)
        if self.merged is not None:
            below = bisect.bisect_left(self.merged, sha) - 1
            above = bisect.bisect_right(self.merged, sha)
            others = [self.merged[p] for p in (below, above) if 0 <= p < len(self.merged)]
        else:
            others = [other for idx in self.indexes for other in _neighbours(idx, sha)]
        length = self.min_len
        for other in others:
            common = _common_hex(sha, other)
            if common < 32:
                length = max(length, common + 1)
        return hex_id[:length].encode()


def _neighbours(idx: PackIndexFile, sha: bytes) -> list[bytes]:
    """The ids sorting right before and after `sha` in one pack index (excluding `sha`)."""
    at, found = idx.search(sha)
    positions = [at - 1, at + 1] if found else [at - 1, at]
    return [idx.name_at(p) for p in positions if 0 <= p < idx.count]


def _common_hex(a: bytes, b: bytes) -> int:
    for i in range(20):
        if a[i] != b[i]:
            return 2 * i + (1 if (a[i] >> 4) == (b[i] >> 4) else 0)
    return 40


class _Side(NamedTuple):
    mode: int
    hex_id: str
    data: bytes | BinaryBlob


def patch(store: Store, blobs: Blobs, changes: list[Change], colors: Colors = PLAIN,
          context: int = 3) -> Iterator[bytes]:
    """git's `--patch` output, one chunk per file (ids abbreviated against `store`), with
    `context` lines around each change (`-U`)."""
    abbrev = Abbrev(store, expected_ids=2 * len(changes))
    for change in changes:
        old = _side(blobs, change.old_mode, change.old_id)
        new = _side(blobs, change.new_mode, change.new_id)
        name_a = _fs(change.old_path if change.old_path is not None else change.path)
        name_b = _fs(change.path)
        score = int(change.status[1:]) if change.status.startswith("R") else None
        if old and new and (old.mode & _TYPE_MASK) != (new.mode & _TYPE_MASK):
            # git shows a file <-> symlink change as a deletion followed by an addition.
            yield _file_patch(name_a, name_b, old, None, score, abbrev, colors, context)
            yield _file_patch(name_a, name_b, None, new, score, abbrev, colors, context)
        else:
            yield _file_patch(name_a, name_b, old, new, score, abbrev, colors, context)


def _side(blobs: Blobs, mode: int | None, hex_id: str | None) -> _Side | None:
    if mode is None or hex_id is None:
        return None
    data = read_side(blobs, hex_id)
    assert data is not None
    return _Side(mode, hex_id, data)


def _file_patch(name_a: bytes, name_b: bytes, one: _Side | None, two: _Side | None,
                score: int | None, abbrev: Abbrev, c: Colors, context: int = 3) -> bytes:
    a_one, b_two = _quote_two(b"a/", name_a), _quote_two(b"b/", name_b)
    label_a = a_one if one else b"/dev/null"
    label_b = b_two if two else b"/dev/null"
    meta, reset = c.meta, c.reset
    info = []
    must_show = False
    if score is not None:
        must_show = True
        info += [meta + b"similarity index %d%%" % score + reset + b"\n",
                 meta + b"rename from " + quote_path(name_a) + reset + b"\n",
                 meta + b"rename to " + quote_path(name_b) + reset + b"\n"]
    old_id = one.hex_id if one else _NULL_HEX
    new_id = two.hex_id if two else _NULL_HEX
    if old_id != new_id:
        line = meta + b"index " + abbrev(old_id) + b".." + abbrev(new_id)
        if one and two and one.mode == two.mode:
            line += b" %06o" % one.mode
        info.append(line + reset + b"\n")
    header = [meta + b"diff --git " + a_one + b" " + b_two + reset + b"\n"]
    if one is None:
        assert two is not None
        header.append(meta + b"new file mode %06o" % two.mode + reset + b"\n")
        must_show = True
    elif two is None:
        header.append(meta + b"deleted file mode %06o" % one.mode + reset + b"\n")
        must_show = True
    elif one.mode != two.mode:
        header += [meta + b"old mode %06o" % one.mode + reset + b"\n",
                   meta + b"new mode %06o" % two.mode + reset + b"\n"]
        must_show = True
    header += info
    if (one and is_binary(one.data)) or (two and is_binary(two.data)):
        if old_id == new_id:
            return b"".join(header) if must_show else b""
        return b"".join(header) + b"Binary files " + label_a + b" and " + label_b + b" differ\n"
    old_data = one.data if one else b""
    new_data = two.data if two else b""
    assert isinstance(old_data, bytes) and isinstance(new_data, bytes)

    old_lines, new_lines = split_lines(old_data), split_lines(new_data)
    edits = diff_lines(old_lines, new_lines) if old_data != new_data else []
    if not edits:
        return b"".join(header) if must_show else b""
    out = header
    out.append(meta + b"--- " + label_a + reset + (b"\t" if b" " in label_a else b"") + b"\n")
    out.append(meta + b"+++ " + label_b + reset + (b"\t" if b" " in label_b else b"") + b"\n")
    if c.enabled:
        _emit_colored(out, c, old_data, new_data, old_lines, new_lines, edits, context)
    else:
        _emit_plain(out, old_lines, new_lines, edits, context)
    return b"".join(out)


_NO_NEWLINE = b"\\ No newline at end of file\n"


def _hunk_headers(old_lines: list[bytes], new_lines: list[bytes], edits: list[Edit],
                  context: int = 3) -> Iterator[tuple[bytes, int, int, Hunk]]:
    """(header line, first old line number, first new line number, hunk) per hunk."""

    func = b""
    searched_to = -1
    for hunk in hunks(edits, len(old_lines), len(new_lines), context):
        line_no = hunk.s1 - 1
        while line_no != searched_to and 0 <= line_no < len(old_lines):
            found = function_line(old_lines[line_no])
            if found is not None:
                func = found
                break
            line_no -= 1
        searched_to = hunk.s1 - 1
        n1, n2 = hunk.e1 - hunk.s1, hunk.e2 - hunk.s2
        start1 = hunk.s1 + 1 if n1 else hunk.s1
        start2 = hunk.s2 + 1 if n2 else hunk.s2
        head = b"@@ -%d" % start1 + (b",%d" % n1 if n1 != 1 else b"")
        head += b" +%d" % start2 + (b",%d" % n2 if n2 != 1 else b"") + b" @@"
        if func:
            head += b" " + func[:max(128 - len(head) - 2, 0)]
        yield _valid_utf8_prefix(head + b"\n"), start1, start2, hunk


def _valid_utf8_prefix(line: bytes) -> bytes:
    """git cuts a hunk header at the first byte that is not valid UTF-8 (to git, U+FFFE and
    U+FFFF are not valid either)."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as err:
        line = line[:err.start]
    cuts = [at for at in (line.find(b"\xef\xbf\xbe"), line.find(b"\xef\xbf\xbf")) if at >= 0]
    return line[:min(cuts)] if cuts else line


def _records(hunk: Hunk, old_lines: list[bytes], new_lines: list[bytes]
             ) -> Iterator[tuple[int, bytes]]:
    """(kind, record) in the order git prints a hunk: 32 context, 45 removed, 43 added."""
    first, last = hunk.edits[0], hunk.edits[-1]
    for k in range(hunk.s2, first.i2):
        yield 32, new_lines[k]
    s1, s2 = first.i1, first.i2
    for edit in hunk.edits:
        while s1 < edit.i1 and s2 < edit.i2:
            yield 32, new_lines[s2]
            s1 += 1
            s2 += 1
        for k in range(edit.i1, edit.i1 + edit.n1):
            yield 45, old_lines[k]
        for k in range(edit.i2, edit.i2 + edit.n2):
            yield 43, new_lines[k]
        s1, s2 = edit.i1 + edit.n1, edit.i2 + edit.n2
    for k in range(last.i2 + last.n2, hunk.e2):
        yield 32, new_lines[k]


def _emit_plain(out: list[bytes], old_lines: list[bytes], new_lines: list[bytes],
                edits: list[Edit], context: int = 3) -> None:
    prefixes = {32: b" ", 45: b"-", 43: b"+"}
    for head, _, _, hunk in _hunk_headers(old_lines, new_lines, edits, context):
        out.append(head if head.endswith(b"\n") else head + b"\n")
        for kind, record in _records(hunk, old_lines, new_lines):
            if record.endswith(b"\n"):
                out.append(prefixes[kind] + record)
            else:
                out.append(prefixes[kind] + record + b"\n" + _NO_NEWLINE)


# --- colour (git's emit_line / whitespace-error rules, default core.whitespace) ------------------


def _emit_colored(out: list[bytes], c: Colors, old_data: bytes, new_data: bytes,
                  old_lines: list[bytes], new_lines: list[bytes], edits: list[Edit],
                  context: int = 3) -> None:
    pre_eof, post_eof = _blank_at_eof(old_data, new_data)
    for head, lno_pre, lno_post, hunk in _hunk_headers(old_lines, new_lines, edits, context):
        out.append(_colored_hunk_header(head, c))
        for kind, record in _records(hunk, old_lines, new_lines):
            line = record if record.endswith(b"\n") else record + b"\n"
            if kind == 32:
                lno_pre += 1
                lno_post += 1
                out.append(_line0(c.context, c.reset, b" ", line))
            elif kind == 45:
                lno_pre += 1
                out.append(_line0(c.old, c.reset, b"-", line))
            else:
                lno_post += 1
                if (pre_eof and post_eof and pre_eof <= lno_pre and post_eof <= lno_post
                        and _is_blank(line)):
                    out.append(_line0(c.whitespace, c.reset, b"+", line))
                else:
                    out.append(c.new + b"+" + c.reset + _whitespace_marked(line, c))
            if not record.endswith(b"\n"):
                lno_pre += 1
                out.append(_line0(c.context, c.reset, b"", _NO_NEWLINE))


def _line0(color: bytes, reset: bytes, sign: bytes, line: bytes) -> bytes:
    """One coloured line; a trailing CR stays outside the colour, as git keeps it."""
    newline = line.endswith(b"\n")
    body = line[:-1] if newline else line
    cr = body.endswith(b"\r")
    if cr:
        body = body[:-1]
    text = color + sign + body + reset if body or sign else b""
    return text + (b"\r" if cr else b"") + (b"\n" if newline else b"")


_GIT_SPACE = b" \t\n\r"


def _is_blank(line: bytes) -> bool:
    return not line.strip(_GIT_SPACE)


def _whitespace_marked(line: bytes, c: Colors) -> bytes:
    """An added line's text in the added colour, with trailing whitespace and spaces before a
    tab in the indent shown in the whitespace-error colour (git's default core.whitespace)."""
    body = line[:-1] if line.endswith(b"\n") else line
    n = len(body)
    trailing = n - len(body.rstrip(_GIT_SPACE))
    end = n - trailing
    out = []
    written = 0
    for i in range(end):
        ch = body[i]
        if ch == 32:
            continue
        if ch != 9:
            break
        if written < i:
            out += [c.whitespace, body[written:i], c.reset, b"\t"]
        else:
            out.append(body[written:i + 1])
        written = i + 1
    if end > written:
        out += [c.new, body[written:end], c.reset]
    if trailing:
        out += [c.whitespace, body[end:], c.reset]
    return b"".join(out) + (b"\n" if line.endswith(b"\n") else b"")


def _colored_hunk_header(line: bytes, c: Colors) -> bytes:
    at = line.find(b"@@", 2)
    if len(line) < 10 or not line.startswith(b"@@") or at < 0:
        return _line0(c.context, c.reset, b"", line)
    ep = at + 2
    out = c.frag + line[:ep] + c.reset
    n = len(line)
    for i in (1, 2):     # git's (odd) trimming of a trailing CR/LF
        if line[n - i] in (10, 13):
            n -= 1
    cp = ep
    while ep < n and line[ep] in (32, 9):
        ep += 1
    if ep != cp:
        out += c.context + line[cp:ep] + c.reset
    if ep < n:
        out += c.func + line[ep:n] + c.reset
    out += line[n:]
    return out if out.endswith(b"\n") else out + b"\n"


def _blank_at_eof(old: bytes, new: bytes) -> tuple[int, int]:
    """Line numbers where blank lines added at the end of the file start (0, 0: none)."""
    blank_old, blank_new = _trailing_blank_lines(old), _trailing_blank_lines(new)
    if blank_new <= blank_old:
        return 0, 0
    return count_lines(old) - blank_old + 1, count_lines(new) - blank_new + 1


def _trailing_blank_lines(data: bytes) -> int:
    if not data:
        return 0
    end = len(data) - 1
    if data[end] == 10:
        end -= 1
    count = 0
    while end > 0:
        start = data.rfind(b"\n", 0, end + 1)
        if not _is_blank(data[start + 1:end + 1]):
            break
        count += 1
        end = start - 1
    return count


def render(form: str, store: Store, changes: list[Change], colors: Colors = PLAIN,
           width: int = 80, context: int = 3) -> Iterator[bytes]:
    """The output of one form as chunks of bytes (`context`: the patch's `-U` lines)."""
    if form not in FORMS:
        raise ValueError(f"unknown diff form {form!r} (expected one of {', '.join(FORMS)})")
    if form == "name-status":
        yield name_status(changes)
        return
    if form == "name-only":
        yield name_only(changes)
        return
    from undostore.git.reader import (
        ObjectReader,  # reads packs directly: no dulwich import on this path
    )

    with ObjectReader(store) as reader:
        if form == "numstat":
            for change in changes:
                if change.counts_cache is None:
                    change.counts_cache = line_counts(reader, change.old_id, change.new_id)
            yield numstat(changes)
        elif form == "stat":
            yield stat(reader, changes, width, colors)
        else:
            yield from patch(store, reader, changes, colors, context)

