"""The screen of `undostore pick` (prompt_toolkit): a list of undo points over a diff preview.

    choice = PickScreen(title, rows, preview, plan).run()   # an index of `rows`, or None

Rows are drawn newest first; the preview of the selected row is asked of `preview(i)` (ANSI text,
git's colours) the first time that row is selected, and kept. Enter asks `plan(i)` for the lines
to show and the question (or a reason it cannot be done), then waits for y (the index is
returned) or anything else (back to the list). q, Escape or Ctrl-C: None, nothing done. Sized
for any terminal from 80x24 up: the list takes at most a third of the rows, the preview the rest.
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
KEYS = " \u2191\u2193 choose  PgUp/PgDn scroll the diff  Enter restore it  q quit"


class Plan(NamedTuple):
    """What Enter shows: the lines of the plan and the question; or (question None) why it
    cannot be done, in `lines`."""

    lines: list[str]
    question: str | None


class PickScreen:
    def __init__(self, title: str, rows: list[str], preview: Callable[[int], tuple[str, str]],
                 plan: Callable[[int], Plan]) -> None:
        """`preview(i)` gives (heading, ANSI text) for row i."""
        self.title, self.rows = title, rows
        self._preview_of, self._plan_of = preview, plan
        self._previews: dict[int, tuple[str, list[str]]] = {}
        self.selected = 0
        self.offset = 0             # first preview line shown
        self.plan: Plan | None = None
        self.app: Application[int | None] = Application(
            layout=Layout(self._layout()), key_bindings=self._keys(), style=STYLE,
            full_screen=True, mouse_support=False)

    def run(self) -> int | None:
        return self.app.run()

    # --- drawing -----

    def _size(self) -> tuple[int, int]:
        size = self.app.output.get_size()
        return size.rows, size.columns

    def _list_rows(self) -> int:
        rows, _ = self._size()
        return max(1, min(len(self.rows), (rows - FIXED_ROWS) // 3))

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

    def _preview(self) -> tuple[str, list[str]]:
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
            return [("class:keys", self._fit(KEYS))]
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
            event.app.exit(result=None)

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
            self._scroll(self._preview_rows() - 1)

        @keys.add("enter")
        def _enter(event: KeyPressEvent) -> None:
            if self.plan is not None:
                self._answer(event, "\r")
                return
            self.plan = self._plan_of(self.selected)

        return keys

    def _answer(self, event: KeyPressEvent, data: str) -> None:
        plan, self.plan = self.plan, None
        if plan is not None and plan.question is not None and data in ("y", "Y"):
            event.app.exit(result=self.selected)

    def _move(self, by: int, event: KeyPressEvent) -> None:
        if self.plan is not None:
            self._answer(event, "")
            return
        self.selected = min(max(0, self.selected + by), len(self.rows) - 1)
        self.offset = 0

    def _scroll(self, by: int) -> None:
        if self.plan is not None:
            return
        lines = self._preview()[1]
        top = max(0, len(lines) - self._preview_rows())
        self.offset = min(max(0, self.offset + by), top)
