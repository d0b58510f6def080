"""A tree patched from its old body and a few edits is byte for byte the tree encoded whole."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from undostore.git.objects import MODE_EXEC, MODE_FILE, MODE_LINK, MODE_TREE, encode_tree
from undostore.limits import DEFAULT_LIMITS
from undostore.snapshot.treepatch import patch_tree, sort_key

INSERTS = DEFAULT_LIMITS.splice_max_inserts

# Names that sort differently as files and as trees ('a' < 'a-' < 'a.b' < 'a/'...).
NAMES = st.text(alphabet="a-./0_~", min_size=1, max_size=4).filter(
    lambda n: "/" not in n and n not in (".", ".."))
MODES = st.sampled_from([MODE_FILE, MODE_EXEC, MODE_LINK, MODE_TREE])


def _sha(seed: object) -> bytes:
    return hashlib.sha1(repr(seed).encode()).digest()


@st.composite
def trees_and_edits(draw):  # noqa: ANN001, ANN201
    names = draw(st.lists(NAMES, min_size=0, max_size=30, unique=True))
    old = {n.encode(): (draw(MODES), _sha(n)) for n in names}
    new = dict(old)
    for name in draw(st.lists(st.sampled_from(names), max_size=8)) if names else []:
        key = name.encode()
        if draw(st.booleans()):
            new.pop(key, None)
        elif key in old:
            mode = old[key][0] if old[key][0] == MODE_TREE else draw(
                st.sampled_from([MODE_FILE, MODE_EXEC, MODE_LINK]))
            new[key] = (mode, _sha((name, draw(st.integers(0, 3)))))
    for name in draw(st.lists(NAMES, max_size=6, unique=True)):
        if name.encode() not in old:
            new[name.encode()] = (draw(MODES), _sha(("new", name)))
    return old, new


@settings(max_examples=400, deadline=None)
@given(trees_and_edits())
def test_a_patched_tree_equals_the_tree_encoded_whole(case):
    old, new = case
    before = [(mode, name, sha) for name, (mode, sha) in old.items()]
    after = [(mode, name, sha) for name, (mode, sha) in new.items()]
    edits = []
    for name in old.keys() | new.keys():
        o = (name, old[name][0] == MODE_TREE) if name in old else None
        n = (new[name][0], name, new[name][1]) if name in new else None
        if o is not None and n is not None and o[1] != (n[0] == MODE_TREE):
            edits += [(o, None), (None, n)]    # a file that became a folder moves in the order
        elif n is None or o is None or old[name] != new[name]:
            edits.append((o, n))
    keys = [sort_key(e) for e in before]
    patched = patch_tree(encode_tree(before), edits, lambda: keys, INSERTS)
    assert patched == encode_tree(after)


def test_an_entry_not_in_the_body_gives_none():
    body = encode_tree([(MODE_FILE, b"a", _sha(1)), (MODE_TREE, b"b", _sha(2))])
    assert patch_tree(body, [((b"c", False), None)], list, INSERTS) is None
    assert patch_tree(body, [((b"b", False), None)], list, INSERTS) is None    # a tree, not a file
    assert patch_tree(body, [((b"a", True), None)], list, INSERTS) is None     # a file, not a tree


def test_a_name_hidden_in_an_id_is_not_taken_for_an_entry():
    sha = b"\0" * 5 + b"100644 x\0" + b"\1" * 6      # the bytes of an entry, inside an id
    body = encode_tree([(MODE_FILE, b"a", sha), (MODE_FILE, b"x", _sha(3))])
    patched = patch_tree(body, [((b"x", False), None)], list, INSERTS)
    assert patched == encode_tree([(MODE_FILE, b"a", sha)])


def test_a_sibling_named_like_a_mode_and_the_name_is_never_taken_for_it():
    for byte in range(256):   # the previous id's last bytes decide whether it lines up
        sha = bytes([byte]) * 20
        before = [(MODE_FILE, b"100644 a", sha), (MODE_FILE, b"a", sha), (MODE_FILE, b"0", sha)]
        patched = patch_tree(encode_tree(before), [((b"a", False), None)], list, INSERTS)
        assert patched in (None, encode_tree(before[::2]))
