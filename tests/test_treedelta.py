"""treedelta: the entries two tree bodies differ in, equal to decoding both entry by entry."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from undostore.git.objects import (
    MODE_EXEC,
    MODE_FILE,
    MODE_LINK,
    MODE_TREE,
    decode_tree,
    tree_sort_key,
)
from undostore.git.treedelta import names_fold_apart, split_tree, tree_delta

MODES = [MODE_FILE, MODE_EXEC, MODE_LINK, MODE_TREE, 0o100664, 0o160000]
names = st.binary(min_size=1, max_size=12).filter(lambda n: b"\x00" not in n)
entries = st.dictionaries(names, st.tuples(st.sampled_from(MODES), st.binary(min_size=20,
                                                                              max_size=20)),
                          max_size=30)


def _body(table: dict[bytes, tuple[int, bytes]]) -> bytes:
    # Any order and any mode spelling decode_tree reads: the delta must not assume git's.
    return b"".join(b"%o %s\x00%s" % (mode, name, sha) for name, (mode, sha) in table.items())


def _naive(old: bytes, new: bytes) -> tuple[list, list, list]:
    before, after = decode_tree(old), decode_tree(new)
    removed = sorted(set(before) - set(after), key=lambda e: e[1])
    added = sorted(set(after) - set(before), key=lambda e: e[1])
    return removed, added, [name for _, name, _ in after]


@settings(max_examples=300)
@given(entries, entries)
def test_delta_equals_decoding_both_bodies(old, new):
    old_body, new_body = _body(old), _body(new)
    delta = tree_delta(old_body, new_body)
    assert delta is not None
    assert (delta.removed, delta.added, delta.new_names) == _naive(old_body, new_body)
    assert not delta.new_has_duplicates


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_a_body_is_cut_only_where_decode_tree_reads_the_same_entries(body):
    pieces = split_tree(body)
    if pieces is None:
        return
    assert b"".join(pieces) == body
    assert [e for p in pieces for e in decode_tree(p)] == decode_tree(body)


def test_a_torn_or_foreign_body_is_left_to_decode_tree():
    good = _body({b"a.txt": (MODE_FILE, b"\x01" * 20)})
    assert split_tree(good[:-1]) is None          # a torn id
    assert split_tree(b"10x644 a\x00" + b"\x01" * 20) is None   # not an octal mode
    assert tree_delta(good, good[:-3]) is None


def test_duplicate_names_in_the_new_body_are_reported():
    dup = _body({b"a": (MODE_FILE, b"\x01" * 20)}) + _body({b"a": (MODE_FILE, b"\x02" * 20)})
    delta = tree_delta(b"", dup)
    assert delta is not None and delta.new_has_duplicates


@given(st.lists(names, max_size=20))
def test_names_fold_apart_only_when_no_two_fold_together(listed):
    folded = [n.lower() for n in listed]
    expected = all(n.isascii() for n in listed) and len(set(folded)) == len(folded)
    assert names_fold_apart(listed) == expected


def test_is_canonical_is_what_encode_tree_writes():
    """A body is canonical exactly when it is `encode_tree` of its own entries: git's mode
    texts and git's order (a sub-tree sorts as if its name ended in '/'), no name twice."""
    from undostore.git.objects import MODE_TREE, decode_tree, encode_tree
    from undostore.git.treedelta import is_canonical

    sha = b"\x00" * 19 + b"/"   # NULs and slashes inside an id are allowed
    good = encode_tree([(0o100644, b"a.txt", sha), (MODE_TREE, b"a", sha),
                        (0o100755, b"a-b", sha), (0o120000, b"z", sha)])
    assert is_canonical(good) and is_canonical(b"")
    assert encode_tree(decode_tree(good)) == good
    odd = [good.replace(b"100644 a.txt", b"0100644 a.txt"),    # zero-padded file mode
           good.replace(b"40000 a\x00", b"040000 a\x00"),      # zero-padded folder mode
           b"100664 a\x00" + sha,                               # old git's plain file
           b"100644 b\x00" + sha + b"100644 a\x00" + sha,       # out of order
           b"100644 a\x00" + sha + b"100644 a\x00" + sha]       # a name twice
    assert not any(is_canonical(body) for body in odd)


@settings(max_examples=300)
@given(entries, st.booleans())
def test_is_canonical_agrees_with_encoding_the_decoded_entries(table, in_git_order):
    from undostore.git.objects import MODE_BYTES, encode_tree
    from undostore.git.treedelta import is_canonical

    body = _body(table)
    if in_git_order:   # the same entries, as encode_tree orders them, mode texts kept
        body = b"".join(b"%o %s\x00%s" % (mode, name, sha) for mode, name, sha in
                        sorted(decode_tree(body), key=lambda e: tree_sort_key(e)))
    decoded = decode_tree(body)
    expected = (all(mode in MODE_BYTES and b"/" not in name for mode, name, _ in decoded)
                and encode_tree(decoded) == body)
    assert is_canonical(body) == expected
