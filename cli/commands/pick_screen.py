"""The screen of `undostore pick` (prompt_toolkit): a list of undo points over a diff preview.

    choice = PickScreen(title, rows, preview, plan, ticks).run()   # (index, ticked) or None

Rows are drawn newest first; the preview of the selected row is asked of `preview(i)` (ANSI text,
git's colours) the first time that row is selected, and kept. Enter asks `plan(i, None)` for the
lines to show and the question (or a reason it cannot be done), then waits for y ((i, None) is
returned) or anything else (back to the list). Right or t lists what going back to row i takes,
`ticks(i)`: each file and, under a text file, each of its hunks, all ticked, the preview showing
the one under the cursor; Space ticks or unticks it (a file: all its hunks), Enter asks
`plan(i, ticked)` and y returns (i, ticked); Left or Escape goes back to the list. q, Escape or
Ctrl-C on the list: None, nothing done. Sized for any terminal from 80x24 up: the list takes at
most a third of the rows, the preview the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import ANSI, StyleAndTextTuples, to_formatted_text
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.styles import Style

FIXED_ROWS = 3          # title, the preview's heading, the key line
STYLE = Style.from_dict({"title": "reverse bold", "selected": "reverse", "heading": "bold",
                         "keys": "reverse", "question": "bold fg:ansiyellow",
                         "refused": "bold fg:ansired"})
KEYS = " \u2191\u2193 choose  PgUp/PgDn scroll  Enter go back  \u2192 tick files/hunks  q quit"
TICK_KEYS = " \u2191\u2193 choose  Space tick  a all  n none  Enter go back  \u2190 points"


class Tick(NamedTuple):
    """A line of the ticking list: a file (`hunk` None) or one of its hunks, its text, and the
    preview (ANSI text) of it."""

    file: int
    hunk: int | None
    text: str
    preview: str


Ticked = frozenset[tuple[int, int | None]]   # the (file, hunk) ticked; (file, None): a whole file


class Plan(NamedTuple):
    """What Enter shows: the lines of the plan and the question; or (question None) why it
    cannot be done, in `lines`."""

    lines: list[str]
    question: str | None


class PickScreen:
    def __init__(self, title: str, rows: list[str], preview: Callable[[int], tuple[str, str]],
                 plan: Callable[[int, Ticked | None], Plan],
                 ticks: Callable[[int], list[Tick]] | None = None) -> None:
        """`preview(i)` gives (heading, ANSI text) for row i."""
        self.title, self.rows = title, rows
        self._preview_of, self._plan_of, self._ticks_of = preview, plan, ticks
        self._previews: dict[int, tuple[str, list[str]]] = {}
        self.selected = 0
        self.offset = 0             # first preview line shown
        self.plan: Plan | None = None
        self.ticks: list[Tick] | None = None   # the ticking list, while it is open
        self.ticked: set[tuple[int, int | None]] = set()
        self.cursor = 0
        self.app: Application[tuple[int, Ticked | None] | None] = Application(
            layout=Layout(self._layout()), key_bindings=self._keys(), style=STYLE,
            full_screen=True, mouse_support=False)

    def run(self) -> tuple[int, Ticked | None] | None:
        return self.app.run()

    # --- drawing -----

    def _size(self) -> tuple[int, int]:
        size = self.app.output.get_size()
        return size.rows, size.columns

    def _list_rows(self) -> int:
        rows, _ = self._size()
        listed = len(self.ticks) if self.ticks is not None else len(self.rows)
        return max(1, min(listed, (rows - FIXED_ROWS) // 3))

    def _preview_rows(self) -> int:
        rows, _ = self._size()
        return max(1, rows - FIXED_ROWS - self._list_rows())

    def _layout(self) -> HSplit:
        return HSplit([
            Window(FormattedTextControl(lambda: [("class:title", self._fit(self.title))]),
                   height=1),
            Window(FormattedTextControl(self._list_text),
                   height=lambda: Dimension.exact(self._list_rows())),
            Window(FormattedTextControl(self._heading), height=1),
            Window(FormattedTextControl(self._body), wrap_lines=False),
            Window(FormattedTextControl(self._footer), height=1),
        ])

    def _fit(self, text: str) -> str:
        width = self._size()[1]
        return text[:width].ljust(width)

    def _list_text(self) -> StyleAndTextTuples:
        if self.ticks is not None:
            return self._tick_text()
        shown = self._list_rows()
        first = min(max(0, self.selected - shown + 1), max(0, len(self.rows) - shown))
        first = min(first, self.selected)
        out: StyleAndTextTuples = []
        for i in range(first, min(len(self.rows), first + shown)):
            marker = ">" if i == self.selected else " "
            style = "class:selected" if i == self.selected else ""
            out.append((style, self._fit(f"{marker} {self.rows[i]}")))
            out.append(("", "\n"))
        return out[:-1]

    def _tick_text(self) -> StyleAndTextTuples:
        assert self.ticks is not None
        shown = self._list_rows()
        first = min(max(0, self.cursor - shown + 1), max(0, len(self.ticks) - shown))
        out: StyleAndTextTuples = []
        for at in range(first, min(len(self.ticks), first + shown)):
            tick = self.ticks[at]
            box = "[x]" if self._is_ticked(tick) else "[ ]"
            indent = "    " if tick.hunk is not None else ""
            style = "class:selected" if at == self.cursor else ""
            marker = ">" if at == self.cursor else " "
            out.append((style, self._fit(f"{marker} {indent}{box} {tick.text}")))
            out.append(("", "\n"))
        return out[:-1]

    def _is_ticked(self, tick: Tick) -> bool:
        """A hunk or whole file: whether it is ticked; a file of hunks: whether all are."""
        assert self.ticks is not None
        if tick.hunk is not None or not self._hunks_of(tick.file):
            return (tick.file, tick.hunk) in self.ticked
        return all((tick.file, h) in self.ticked for h in self._hunks_of(tick.file))

    def _hunks_of(self, file: int) -> list[int]:
        assert self.ticks is not None
        return [t.hunk for t in self.ticks if t.file == file and t.hunk is not None]

    def _preview(self) -> tuple[str, list[str]]:
        if self.ticks is not None:
            tick = self.ticks[self.cursor]
            return ("ticked: the plan takes it" if self._is_ticked(tick)
                    else "not ticked: it stays"), tick.preview.splitlines()
        if self.selected not in self._previews:
            heading, text = self._preview_of(self.selected)
            self._previews[self.selected] = (heading, text.splitlines())
        return self._previews[self.selected]

    def _heading(self) -> StyleAndTextTuples:
        if self.plan is not None and self.plan.question is None:
            return [("class:heading", self._fit(" nothing to do:"))]
        if self.plan is not None:
            return [("class:heading", self._fit(" the plan (what going back changes):"))]
        heading, lines = self._preview()
        where = ""
        if len(lines) > self._preview_rows():
            last = min(len(lines), self.offset + self._preview_rows())
            where = f" [lines {self.offset + 1}-{last} of {len(lines)}]"
        return [("class:heading", self._fit(f"\u2500\u2500 {heading}{where} "))]

    def _body(self) -> StyleAndTextTuples:
        if self.plan is not None:
            lines = self.plan.lines[:self._preview_rows()]
            return to_formatted_text("\n".join(lines))
        lines = self._preview()[1][self.offset:self.offset + self._preview_rows()]
        return to_formatted_text(ANSI("\n".join(lines)))

    def _footer(self) -> StyleAndTextTuples:
        if self.plan is None:
            return [("class:keys", self._fit(TICK_KEYS if self.ticks is not None else KEYS))]
        if self.plan.question is None:
            return [("class:refused", self._fit(" cannot go back there (any key: back)"))]
        return [("class:question", self._fit(f" {self.plan.question} [y/N] "))]

    # --- keys -----

    def _keys(self) -> KeyBindings:
        keys = KeyBindings()

        @keys.add("<any>")
        def _any(event: KeyPressEvent) -> None:
            if self.plan is not None:
                self._answer(event, event.data)

        @keys.add("q")
        @keys.add("escape", eager=True)
        @keys.add("c-c")
        def _quit(event: KeyPressEvent) -> None:
            if self.plan is not None and event.data not in ("\x03",):
                self.plan = None        # q or Escape at the question: no, back to the list
                return
            if self.ticks is not None and event.data not in ("\x03",):
                self._close_ticks()
                return
            event.app.exit(result=None)

        @keys.add("right")
        @keys.add("t")
        def _open_ticks(event: KeyPressEvent) -> None:
            if self.plan is not None:
                self._answer(event, event.data)
            elif self.ticks is None and self._ticks_of is not None:
                self.ticks = self._ticks_of(self.selected)
                self.ticked = {(t.file, t.hunk) for t in self.ticks
                               if t.hunk is not None or not any(
                                   o.file == t.file and o.hunk is not None for o in self.ticks)}
                self.cursor, self.offset = 0, 0

        @keys.add("left")
        def _close(event: KeyPressEvent) -> None:
            if self.plan is not None:
                self._answer(event, event.data)
            elif self.ticks is not None:
                self._close_ticks()

        @keys.add("a")
        @keys.add("n")
        def _all_or_none(event: KeyPressEvent) -> None:
            if self.plan is not None:
                self._answer(event, event.data)
            elif self.ticks is not None:
                every = {(t.file, t.hunk) for t in self.ticks
                         if t.hunk is not None or not self._hunks_of(t.file)}
                self.ticked = every if event.data == "a" else set()

        @keys.add("up")
        @keys.add("k")
        def _up(event: KeyPressEvent) -> None:
            self._move(-1, event)

        @keys.add("down")
        @keys.add("j")
        def _down(event: KeyPressEvent) -> None:
            self._move(1, event)

        @keys.add("pageup")
        def _page_up(event: KeyPressEvent) -> None:
            self._scroll(-(self._preview_rows() - 1))

        @keys.add("pagedown")
        @keys.add(" ")
        def _page_down(event: KeyPressEvent) -> None:
            if self.plan is not None:
                self._answer(event, " ")
                return
            if self.ticks is not None and event.data == " ":
                self._toggle()
                return
            self._scroll(self._preview_rows() - 1)

        @keys.add("enter")
        def _enter(event: KeyPressEvent) -> None:
            if self.plan is not None:
                self._answer(event, "\r")
                return
            self.plan = self._plan_of(self.selected, self._chosen())

        return keys

    def _answer(self, event: KeyPressEvent, data: str) -> None:
        plan, self.plan = self.plan, None
        if plan is not None and plan.question is not None and data in ("y", "Y"):
            event.app.exit(result=(self.selected, self._chosen()))

    def _chosen(self) -> Ticked | None:
        """What is ticked (None: the list is not open, or everything is: the whole turns)."""
        if self.ticks is None:
            return None
        every = {(t.file, t.hunk) for t in self.ticks
                 if t.hunk is not None or not self._hunks_of(t.file)}
        return None if self.ticked >= every else frozenset(self.ticked)

    def _toggle(self) -> None:
        assert self.ticks is not None
        tick = self.ticks[self.cursor]
        hunks = self._hunks_of(tick.file) if tick.hunk is None else []
        items = {(tick.file, h) for h in hunks} if hunks else {(tick.file, tick.hunk)}
        if self._is_ticked(tick):
            self.ticked -= items
        else:
            self.ticked |= items

    def _close_ticks(self) -> None:
        self.ticks, self.ticked, self.cursor, self.offset = None, set(), 0, 0

    def _move(self, by: int, event: KeyPressEvent) -> None:
        if self.plan is not None:
            self._answer(event, "")
            return
        if self.ticks is not None:
            self.cursor = min(max(0, self.cursor + by), len(self.ticks) - 1)
            self.offset = 0
            return
        self.selected = min(max(0, self.selected + by), len(self.rows) - 1)
        self.offset = 0

    def _scroll(self, by: int) -> None:
        if self.plan is not None:
            return
        lines = self._preview()[1]
        top = max(0, len(lines) - self._preview_rows())
        self.offset = min(max(0, self.offset + by), top)
