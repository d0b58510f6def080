"""Attribution by tool call: a turn's change is the sum of its tool calls' changes.

Where a host reports each tool call (before and after it, with an id), undostore keeps, per
turn, only what the conversation's own calls changed (the contract's "Attribution by tool
call"). The rule, decided here:

- a file tool (it names its files: Edit, Write, apply_patch, ...) owns the change of those
  files over its call;
- any other tool that may write (a shell, an MCP tool, one undostore does not know) owns what
  changed in the tree during its call;
- tools known to change nothing record nothing (the host's record says which);
- what changed outside every call of the session (the user's editor, a formatter, another
  program) is not the turn's: undo and redo keep it;
- a call whose after event never came (its host killed, the tool cut short) ends at the
  session's next prompt, turn end or step, maybe hours later: a file written later than any
  host lets one call run after it began is not its own (`unreported_end`).

A turn's own change is kept as segments (journal.Point.own): pairs of trees (before, after),
oldest first, that differ only at the paths its calls changed, each path's before as the first
call that changed it found it and its after as the last one left it. A call that changes a
path something outside the calls changed since the turn's last call there (its before is not
the segment's after) opens a new segment, so an undo takes the segments back newest first, each
3-way against the files then, and the outside change is kept.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from undostore.git.packwriter import PackWriter
from undostore.history.toolcall import FILE, SHELL, OpenCall
from undostore.restore.plan import Entry, TreeBodies, changed_files
from undostore.restore.treebuild import TreeBuilder, built_root, entries_at, with_entries_of
from undostore.store.recent import remember

if TYPE_CHECKING:
    from undostore.history.activity import Span
    from undostore.store.store import Store

# path -> (its entry before the call, after it); None: no file there
Changes = dict[str, tuple[Entry | None, Entry | None]]
Segment = tuple[str, str]

# No host lets one tool call run longer (Claude Code's Bash: ten minutes at most). A file written
# later than this after a call began was not written by it, whatever ends the call.
LONGEST_CALL_SECONDS = 600.0


def call_changes(store: Store, call: OpenCall, after: str) -> Changes:
    """What `call` changed: the files that differ between the snapshots at its start and its
    end, only those it names for a file tool."""
    changes = tree_changes(store, call.before, after)
    if call.call.kind == FILE:
        return {path: changes[path] for path in call.call.paths if path in changes}
    return changes


def unreported_end(root: str | None, call: OpenCall, changes: Changes, now: float) -> Changes:
    """The changes of a call whose after event never came, ended `now` (its session's next
    prompt, turn end or step), less each file written (its mtime now) later than
    `LONGEST_CALL_SECONDS` after the call began: the user's, once the host was killed, and
    left as they are by undo and redo. A file no longer there cannot be dated: its change
    stays the call's. Ended within that time, the call keeps what changed."""
    latest = call.started + LONGEST_CALL_SECONDS
    if root is None or now <= latest:
        return changes
    kept: Changes = {}
    for path, change in changes.items():
        try:
            written = os.lstat(os.path.join(root, path)).st_mtime
        except OSError:
            written = None
        if written is None or written <= latest:
            kept[path] = change
    return kept


def tree_changes(store: Store, before: str, after: str) -> Changes:
    """Each file that differs between two trees, with its entry in each."""
    return changed_files(store.index.read_tree_body, bytes.fromhex(before), bytes.fromhex(after))


def shared(store: Store, session: str, call: OpenCall, changes: Changes, after: str,
           now: float) -> tuple[Changes, dict[str, tuple[str, ...]]]:
    """A shell call's `changes` (it ended at `now`, the files at `after`) less the files
    another writer named while it ran (a file tool, the session's own run beside it included,
    or an undostore step: theirs), and those in doubt, each with the other sessions
    (history/activity.py): changed while another session's shell call ran too (between the
    snapshots that bound the two calls' common time), or named by another session's file tool
    and changed outside its calls too (`_changed_beside`). A file tool's change is its own
    whatever else ran."""
    if call.call.kind == FILE:
        return changes, {}
    from undostore.history import activity

    writers = activity.others(store.cache_dir, session, call.call.call_id, call.started, now)
    named = {path for w in writers if w.kind != SHELL for path in w.paths}
    kept = {path: change for path, change in changes.items() if path not in named}
    doubt: dict[str, set[str]] = {}
    for path in changes.keys() & named:   # theirs, unless it changed outside their calls too
        others = _changed_beside(store, call, after, now, path, writers, session)
        if others:
            kept[path] = changes[path]
            doubt[path] = set(others)
    for other in writers:
        if other.kind != SHELL or other.session in (None, session):
            continue
        start = other.before if other.start > call.started and other.before else call.before
        end = other.after if other.end is not None and other.end < now and other.after else after
        for path in tree_changes(store, start, end).keys() & kept.keys():
            doubt.setdefault(path, set()).add(other.session)
    return kept, {path: tuple(sorted(others)) for path, others in doubt.items()}


def _changed_beside(store: Store, call: OpenCall, after: str, now: float, path: str,
                    writers: list[Span], session: str) -> tuple[str, ...]:
    """The sessions whose file tools named `path` while the shell `call` ran, where the path
    also changed during the shell outside those calls (before the first, between two, after
    the last): that part may be the shell's, or not; none where a step or the session's own
    file tool named it too (theirs, as before), or a call's files were not captured."""
    naming = sorted((w for w in writers if w.kind != SHELL and path in w.paths),
                    key=lambda w: w.start)
    if any(w.session in (None, session) or w.before is None
           or (w.end is not None and w.after is None) for w in naming):
        return ()
    reader = store.index   # the store's own, seeing every pack written
    trees = TreeBodies(reader.read_tree_body, {})

    def entry(tree: str) -> Entry | None:
        return entries_at(trees, bytes.fromhex(tree), [path])[path]

    # The path as each stretch outside their calls began and ended: from the shell's start
    # (or the first call's, if it began first) to the first call, ..., the last to the end.
    marks = [call.before if naming[0].start > call.started else naming[0].before]
    for w in naming:
        marks += [w.before, w.after if w.end is not None and w.end < now else after]
    marks.append(after)
    outside = any(entry(marks[i]) != entry(marks[i + 1]) for i in range(0, len(marks), 2))
    return tuple(sorted({w.session for w in naming if w.session})) if outside else ()


def add_call(store: Store, own: tuple[Segment, ...], start: str, changes: Changes, *,
             split: bool = True, listed: bool = False) -> tuple[Segment, ...]:
    """The turn's segments `own` (none yet: the turn starts at the tree `start`) with one
    call's `changes` added, per the module docstring (not `split`: never a new segment).
    `listed`: the caller lists the new trees in the journal before it lets the store lock go
    (no recent-id write)."""
    changes = {path: pair for path, pair in changes.items() if pair[0] != pair[1]}
    if not changes:
        return own
    segments = list(own) or [(start, start)]
    before, after = segments[-1]
    paths = sorted(changes)
    reader = store.index   # the store's own, seeing every pack written
    trees = TreeBodies(reader.read_tree_body, {})
    had = entries_at(trees, bytes.fromhex(before), paths)
    has = entries_at(trees, bytes.fromhex(after), paths)
    outside = split and any(had[p] != has[p] and has[p] != changes[p][0] for p in paths)
    if outside:   # changed outside the calls since: a new segment on the files as they were
        base = after
        new_before = {p: changes[p][0] for p in paths}
    else:         # the segment goes on: a path it had not changed starts from the call's
        base = before
        new_before = {p: changes[p][0] for p in paths if had[p] == has[p]}
    new_after = {p: changes[p][1] for p in paths}
    writer = PackWriter(store.pack_dir)
    try:
        builder = TreeBuilder(reader, store, writer, [], trees.bodies)
        made = (built_root(store, writer, builder, base, new_before),
                built_root(store, writer, builder, after, new_after))
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    store.refresh()
    if not listed:   # gc's grace until the journal lists them
        remember(store.path, *(bytes.fromhex(sha) for sha in made))
    return (*segments, made) if outside else (*segments[:-1], made)


def net(store: Store, own: tuple[Segment, ...]) -> Segment:
    """The turn's whole own change as one pair (what `show` and `log --stat` list): each
    path from as the first segment found it to as the last one left it."""
    folded = own[:1]
    for before, after in own[1:]:
        folded = add_call(store, folded, before, tree_changes(store, before, after),
                          split=False)
    return folded[0]


def without(store: Store, segment: Segment, paths: frozenset[str]) -> Segment:
    """`segment` changing none of `paths`: its after tree given its before's entries there."""
    before, after = segment
    return before, entries_from(store, after, before, sorted(paths))


def entries_from(store: Store, tree: str, source: str, paths: list[str]) -> str:
    """`tree` with `source`'s entries at `paths` (treebuild.py `with_entries_of`), a new tree
    kept by gc's grace while a step merges with it (a segment less some paths; a file's change
    up to or from its cut, history/steps.py)."""
    made = with_entries_of(store, tree, source, paths)
    if made != tree:
        remember(store.path, bytes.fromhex(made))
    return made
