"""What undostore knows about each agent host's hook events: one `Host` record per host.

A record says where the host puts the session id, the folder and the prompt in its event JSON,
which event names mean "a prompt was submitted" (record an undo point) and "the turn ended"
(record the files after it), and how the host reads the hook's stdout. `commands/hook.py` holds no
host knowledge of its own, so adding a host is adding a record here (and its config to
`hosts/init.py`).

Sources of each shape (read 2026-12; where one differs from CONTRACT.md's table, the host wins,
see docs/design.md "Agent hosts"):
- claude-code: code.claude.com/docs/en/hooks (UserPromptSubmit: session_id, cwd, prompt; Stop;
  `{"decision": "block", "reason"}` drops the prompt and shows the reason; slash commands and
  plugin commands, `/plugin:command`, arrive in `prompt` as typed, unexpanded).
- codex: openai/codex codex-rs/hooks/schema/generated/user-prompt-submit.command.{input,output}
  .schema.json and stop.command.input.schema.json (same names as Claude Code, plus turn_id, model);
  developers.openai.com/codex/hooks (`.codex/hooks.json`; matching hooks start concurrently).
- codex-notify: openai/codex docs/config.md "notify" (one JSON argument: type
  "agent-turn-complete", thread-id, turn-id, cwd, input-messages, last-assistant-message).
- cursor: cursor.com/docs/agent/hooks (every event: conversation_id, generation_id,
  hook_event_name, workspace_roots; beforeSubmitPrompt: prompt, answer `{"continue": bool,
  "user_message"}`; stop: status, loop_count, answer `{}` or `{"followup_message"}`).
- gemini: google-gemini/gemini-cli docs/hooks/reference.md (session_id, cwd, hook_event_name,
  BeforeAgent: prompt, `{"decision": "block", "reason"}` stops the turn before the model and
  keeps the prompt out of the conversation (0.61's bundle: isBlockingDecision,
  AgentExecutionBlocked; `continue: false` adds it to the history); AfterAgent; stdout must be
  JSON only).
- copilot: docs.github.com/en/copilot/reference/hooks-reference (camelCase events in
  `.github/hooks/*.json`: sessionId, timestamp, cwd; userPromptSubmitted: prompt; agentStop:
  stopReason; no event name in the payload). Seen in runs of the pinned 1.0.102
  (tests/test_host_copilot.py): a userPromptSubmitted hook that answers `{"handled": true,
  "responseContent"}` shows that text as the reply and sends nothing to the model; one that
  answers `{"additionalContext"}` adds it to the prompt (as a `<system_reminder>`); a folder's
  hooks load only once the user trusted the folder (its trust prompt; `trustedFolders`).
- windsurf: docs.windsurf.com/windsurf/cascade/hooks (agent_action_name, trajectory_id,
  execution_id, timestamp, tool_info; pre_user_prompt: tool_info.user_prompt, a pre-hook blocks
  with exit code 2; post_cascade_response; no folder: the hook runs in the workspace root).
- opencode, pi: in-process plugins (`hosts/init.py` writes them) that run `undostore hook --host H`
  with a Claude-Code-like event of their own: session_id, cwd, prompt. Pi's extension gives
  each prompt a turn_id and keeps, in Pi's session tree, where each turn began and ended, so
  that `/undo` and `/redo` (commands it registers) move the conversation with the files
  (pi-coding-agent docs/extensions.md: registerCommand, navigateTree, appendEntry). OpenCode
  (1.18.33, read in its bundle) runs `chat.message` with the user's message and its parts
  before saving them and calling the model, and gives no way to stop that call: the plugin
  sends the message id, and for `/undo` puts the model's note in the text's place.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from undostore import ToolCall

Path = tuple[str | int, ...]

# How a host reads the hook's stdout.
SILENT = "silent"            # print nothing (it may go to the model); the /undo answer only
ALWAYS_JSON = "always-json"  # exactly one JSON object on every path (Cursor)
JSON_ONLY = "json-only"      # nothing, or JSON only (Gemini)

# How a host lets a hook stop a prompt from reaching the model.
# {"decision": "block", "reason": ...} on stdout, exit 0. Gemini CLI then keeps the prompt out
# of the conversation (with `continue: false` it adds it to the history, and the blocked
# `/undo`s reached the model merged into the next prompt: its GeminiClient.sendMessageStream),
# and shows "Agent execution blocked: ..." as a warning.
BLOCK_DECISION = "decision-block"
BLOCK_CONTINUE = "continue-false"  # {"continue": false, "user_message": ...} (Cursor)
BLOCK_EXIT_2 = "exit-2"            # the reason on stderr, exit 2 (Windsurf's pre-hooks)
BLOCK_HANDLED = "handled"          # {"handled": true, "responseContent": ...}: shown as the reply
#                                    (Copilot CLI)
BLOCK_NONE = "none"                # the host has no way: the command is done, the prompt goes on


PROMPT, AFTER, OTHER = "prompt", "after", "other"   # what an event is to undostore
TOOL_BEFORE, TOOL_AFTER = "tool-before", "tool-after"   # a tool call begins, ends (or failed)


class BadEvent(ValueError):
    """An event undostore cannot read (a field of the wrong type, a folder that is none): the
    message is what the hook says in its one stderr line."""


class HostEvent(NamedTuple):
    """One hook event, read once from its host's JSON (`Host.parse`): everything the hook's
    steps use, so none goes back to the dict."""

    host: Host
    name: str                 # the host's own name for it (`UserPromptSubmit`, ...)
    kind: str                 # PROMPT, AFTER or OTHER
    session: str | None       # the session it names (None: $UNDOSTORE_SESSION, else default)
    cwd: str | None           # its folder (None: the host sends none, the process's own)
    prompt: object            # the prompt as sent (any JSON value; None for none)
    event_id: str | None      # the id the host gave it (hosts/once.py)
    call: ToolCall | None = None   # a tool event's call (None: a tool that changes nothing)

    @property
    def label(self) -> str | None:
        """The prompt's first non-blank line, cut at `LABEL_CHARS` (None for no prompt)."""
        if not isinstance(self.prompt, str):
            return None
        for line in self.prompt.splitlines():
            if line.strip():
                return line.strip()[:LABEL_CHARS]
        return None


LABEL_CHARS = 80


class ToolNames(NamedTuple):
    """How a host names its tools: each file tool with the input fields that name its files,
    and the tools known to change nothing (any other tool is a shell: history/attribution.py)."""

    files: dict[str, tuple[str, ...]]
    quiet: frozenset[str]
    patches: dict[str, str] = {}   # a tool whose input field holds an apply_patch text, which
    #                                names its files (`*** Add File: PATH`, ...)

    def call(self, call_id: str, tool: str, tool_input: object, cwd: str | None
             ) -> ToolCall | None:
        """The call as the library records it; None for a tool that changes nothing. A file
        tool's relative paths are taken from the event's folder."""
        from undostore import ToolCall

        if tool in self.quiet:
            return None
        if isinstance(tool_input, str) and tool_input.lstrip().startswith("{"):
            tool_input = _json_object(tool_input)   # Copilot's documented toolArgs: JSON text
        fields = self.files.get(tool)
        patch = tool_input.get(self.patches[tool]) if (
            tool in self.patches and isinstance(tool_input, dict)) else None
        if fields is None and not isinstance(patch, str):
            return ToolCall(call_id, tool, "shell", (), self._label(tool_input))
        given = ([tool_input.get(f) for f in fields or ()] if isinstance(tool_input, dict)
                 else []) + (_patch_paths(patch) if isinstance(patch, str) else [])
        paths = tuple(os.path.join(cwd or os.getcwd(), p) for p in given
                      if isinstance(p, str) and p)
        return ToolCall(call_id, tool, "file", paths)


    @staticmethod
    def _label(tool_input: object) -> str:
        """What a shell call ran, on one line (`command`, else its `description`)."""
        if not isinstance(tool_input, dict):
            return ""
        for field in ("command", "description"):
            value = tool_input.get(field)
            if isinstance(value, str) and value.strip():
                return " ".join(value.split())[:LABEL_CHARS]
        return ""


class ToolEvents(NamedTuple):
    """A host's tool events: their names, where the tool's name, its input and the call's id
    are, and how it names its tools."""

    before: frozenset[str]
    after: frozenset[str]       # after the call, and after a failed one
    tool: Path
    tool_input: Path
    call_id: Path | None        # None (or none in the event): a call is known by its tool and
    #                             input, which its before and after events both carry
    names: ToolNames
    by_event: dict[str, str] = {}   # a host whose events name the tool (Windsurf's
    #                                 pre_run_command): each event's tool, where `tool` is not
    key_fields: tuple[str, ...] = ()   # the input fields that know a call with no id (none:
    #                                    all; an after event that adds its result to the input)
    delivered: Path | None = None   # the id a tool event is delivered under, where the host's
    #                                 event id (`Host.event_id`) is the turn's

    @property
    def events(self) -> tuple[str, ...]:
        """Its events, before then after, as `init` asks the host for them."""
        return (*sorted(self.before), *sorted(self.after))


class Host(NamedTuple):
    """One agent host's hook protocol."""

    name: str
    prompt_events: frozenset[str]
    after_events: frozenset[str]
    event_key: str | None        # where the event's name is (None: named on the command line)
    session: Path
    root: Path | None            # None: the host sends no folder (the process's own)
    prompt: Path
    stdout: str = SILENT
    block: str = BLOCK_DECISION
    after_records_point: bool = False  # codex-notify: the only event is the turn's end
    event_id: Path | None = None       # the id the host gives an event (hosts/once.py)
    context: str | None = None         # the prompt event's name in `hookSpecificOutput`, where
    #                                    the host adds a hook's `additionalContext` to the prompt
    context_at_top: bool = False       # `additionalContext` at the answer's top level (Copilot)
    ends_by_id: bool = False           # the after-turn event carries its prompt event's id: a
    #                                    late end of an earlier turn records nothing
    tools: ToolEvents | None = None    # its tool events (None: it sends none: turns are
    #                                    windows of time, history/attribution.py)
    plugin: bool = False               # the hook is run by undostore's own plugin (`init`
    #                                    writes it), which reads JSON: a command's answer holds
    #                                    the line, the turns moved (by the event ids the plugin
    #                                    gave them) and the model's note; a prompt's, the notes
    #                                    waiting (`context`). The plugin rewinds its conversation
    #                                    (Pi) or hands the note to the model in the prompt's place

    @property
    def hook_events(self) -> tuple[str, ...]:
        """The events `init` asks a command-hook host for: its prompt and after-turn events,
        then its tool events (records are the one place that names them)."""
        return (*sorted(self.prompt_events), *sorted(self.after_events),
                *(self.tools.events if self.tools is not None else ()))

    def event_name(self, event: dict[str, Any], named: str | None) -> str | None:
        if named:
            return named
        if self.event_key is not None:
            value = event.get(self.event_key)
            return value if isinstance(value, str) else None
        return self._guess_event(event)

    def _guess_event(self, event: dict[str, Any]) -> str | None:
        """Copilot's payload has no event name: a prompt is the prompt event, a stop reason the
        after-turn event."""
        if "prompt" in event:
            return next(iter(self.prompt_events))
        if "stopReason" in event:
            return next(iter(self.after_events))
        return None

    def id_of(self, event: dict[str, Any], where: Path | None = None) -> str | None:
        """The id the host gave `event` (at `where`, else `event_id`), None where it gave
        none."""
        where = where if where is not None else self.event_id
        ident = pick(event, where) if where is not None else None
        return str(ident) if isinstance(ident, (str, int)) and str(ident) else None

    def parse(self, event: dict[str, Any], name: str) -> HostEvent:
        """`event` (named `name`) read once into its record; BadEvent naming what is wrong.
        A session id is taken as it comes (journal.session_name_for names its session)."""
        kind = (PROMPT if name in self.prompt_events else AFTER if name in self.after_events
                else self._tool_kind(name))
        if kind == OTHER:   # nothing is done with it: nothing of it is read
            return HostEvent(self, name, kind, None, None, None, None)
        cwd = _text(event, self.root, "folder") if self.root is not None else None
        if cwd is not None and not os.path.isdir(cwd):
            raise BadEvent(f"{cwd}: the hook event's folder is not a folder")
        session = _text(event, self.session, "session id")
        if session is not None:
            from undostore import session_name_for

            session = session_name_for(session)
        if kind in (TOOL_BEFORE, TOOL_AFTER):
            return self._tool_event(event, name, kind, session, cwd)
        return HostEvent(self, name, kind, session, cwd, pick(event, self.prompt),
                         self.id_of(event))

    def _tool_kind(self, name: str) -> str:
        if self.tools is None:
            return OTHER
        return (TOOL_BEFORE if name in self.tools.before else TOOL_AFTER
                if name in self.tools.after else OTHER)

    def _tool_event(self, event: dict[str, Any], name: str, kind: str, session: str | None,
                    cwd: str | None) -> HostEvent:
        """A tool event; its call None for a tool that changes nothing (its before event says
        only that the host reports its calls; its after event is nothing to undostore). One
        that names no tool or no call id cannot be paired with its other half: nothing."""
        assert self.tools is not None
        tool = self.tools.by_event.get(name) or _text(event, self.tools.tool, "tool name")
        call_id = (_text(event, self.tools.call_id, "tool call id")
                   if self.tools.call_id is not None else None) or _call_key(
                       tool, event, self.tools)
        call = (self.tools.names.call(call_id, tool, pick(event, self.tools.tool_input), cwd)
                if tool is not None and call_id is not None else None)
        if call is None and (kind == TOOL_AFTER or call_id is None):
            return HostEvent(self, name, OTHER, None, None, None, None)
        # Known for once.py by its call and the host's id of the event where it gives one
        # (Gemini's timestamp: one tool run twice with one input is two calls).
        delivered = self.id_of(event, self.tools.delivered)
        return HostEvent(self, name, kind, session, cwd, None,
                         f"{call_id} {delivered}" if delivered else call_id, call)

    def quiet_answer(self, event_name: str | None) -> str:
        """What stdout gets when the hook has nothing to say (done or failed)."""
        if self.stdout != ALWAYS_JSON:
            return ""
        return '{"continue": true}' if event_name in self.prompt_events else "{}"


# The lines of an apply_patch text that name a file it adds, changes, deletes or moves to.
_PATCH_FILE = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")


def _patch_paths(patch: str) -> list[str]:
    return [line[len(head):].strip() for line in patch.splitlines()
            for head in _PATCH_FILE if line.startswith(head)]


def _json_object(text: str) -> object:
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text


def _call_key(tool: str | None, event: dict[str, Any], tools: ToolEvents) -> str:
    """A call's id where the host gives none: its tool and input, which its before and after
    events carry alike (two calls of one tool with one input at once are one to undostore)."""
    import hashlib
    import json

    given = pick(event, tools.tool_input)
    if tools.key_fields and isinstance(given, dict):
        given = {field: given.get(field) for field in tools.key_fields}
    text = json.dumps([tool, given], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _text(event: dict[str, Any], path: Path, what: str) -> str | None:
    value = pick(event, path)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BadEvent(f"the hook event's {what} ({'.'.join(map(str, path))}) is not text: "
                       f"{value!r}")
    return value


def pick(event: dict[str, Any], path: Path) -> Any:
    """The value at `path` in the event (None where any step is missing)."""
    value: Any = event
    for step in path:
        if isinstance(step, int):
            if not isinstance(value, list) or len(value) <= step:
                return None
        elif not isinstance(value, dict):
            return None
        value = value[step] if isinstance(step, int) else value.get(step)
    return value


# Claude Code 2.1's tool events (its bundle: PreToolUse {tool_name, tool_input, tool_use_id};
# PostToolUse adds tool_response; PostToolUseFailure, error and is_interrupt) and built-in tools.
CLAUDE_TOOLS = ToolEvents(
    frozenset({"PreToolUse"}), frozenset({"PostToolUse", "PostToolUseFailure"}),
    ("tool_name",), ("tool_input",), ("tool_use_id",),
    ToolNames({"Edit": ("file_path",), "MultiEdit": ("file_path",), "Write": ("file_path",),
               "NotebookEdit": ("notebook_path",)},
              frozenset({"Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "TodoWrite",
                         "NotebookRead", "ExitPlanMode", "BashOutput", "ListMcpResourcesTool",
                         "ReadMcpResourceTool", "AskUserQuestion"})))

# Codex 0.171's tool events: Claude Code's names and fields (its hooks schema
# pre-tool-use.command.input, plus turn_id); seen in a run (tests/test_host_codex.py): its
# shell as tool_name "Bash" and apply_patch as "apply_patch", the patch in input.command.
CODEX_TOOLS = ToolEvents(
    frozenset({"PreToolUse"}), frozenset({"PostToolUse"}),
    ("tool_name",), ("tool_input",), ("tool_use_id",),
    ToolNames({}, frozenset({"update_plan", "view_image", "web_search"}),
              patches={"apply_patch": "command"}))

# OpenCode 1.18's plugin hooks tool.execute.before ({tool, sessionID, callID}, {args}) and
# .after ({..., args}), read in its bundle; undostore's plugin sends them as these fields.
OPENCODE_TOOLS = ToolEvents(
    frozenset({"tool.execute.before"}), frozenset({"tool.execute.after"}),
    ("tool_name",), ("tool_input",), ("call_id",),
    ToolNames({"edit": ("filePath",), "write": ("filePath",), "multiedit": ("filePath",)},
              frozenset({"read", "glob", "grep", "list", "webfetch", "websearch", "codesearch",
                         "todowrite", "todoread", "skill", "lsp"})))

# Pi 0.73's extension events tool_call and tool_result (toolName, toolCallId, input: its
# docs/extensions.md; its tools' schemas in dist/core/tools), sent by undostore's extension.
PI_TOOLS = ToolEvents(
    frozenset({"tool_call"}), frozenset({"tool_result"}),
    ("tool_name",), ("tool_input",), ("tool_call_id",),
    ToolNames({"edit": ("path", "file_path"), "write": ("path", "file_path")},
              frozenset({"read", "grep", "find", "ls"})))

# Gemini CLI 0.61's tool events (its bundle, HookEventHandler.fireBeforeToolEvent: tool_name,
# tool_input, no call id; AfterTool adds tool_response) and built-in tools (*_TOOL_NAME).
GEMINI_TOOLS = ToolEvents(
    frozenset({"BeforeTool"}), frozenset({"AfterTool"}), ("tool_name",), ("tool_input",), None,
    ToolNames({"write_file": ("file_path",), "replace": ("file_path",)},
              frozenset({"read_file", "read_many_files", "list_directory", "glob",
                         "grep_search", "web_fetch", "google_web_search", "write_todos",
                         "ask_user", "enter_plan_mode", "exit_plan_mode", "get_internal_docs",
                         "list_mcp_resources", "read_mcp_resource", "activate_skill",
                         "update_topic", "complete_task"})))

# Copilot CLI 1.0.102's tool events, seen in runs (tests/test_host_copilot.py): preToolUse
# {sessionId, timestamp, cwd, toolName, toolArgs}, postToolUse adds toolResult,
# postToolUseFailure an error; no call id (paired by tool and input, as Gemini's); parallel
# calls of one reply start together. Its tools as its requests offer them to the model.
COPILOT_TOOLS = ToolEvents(
    frozenset({"preToolUse"}), frozenset({"postToolUse", "postToolUseFailure"}),
    ("toolName",), ("toolArgs",), None,
    ToolNames({"create": ("path",), "edit": ("path",)},
              frozenset({"view", "grep", "glob", "web_fetch", "read_bash", "list_bash",
                         "fetch_copilot_cli_documentation", "semantic_code_search", "skill",
                         "read_agent", "list_agents", "sql", "session_store_sql",
                         "report_intent"})))

# Cursor's tool events as its hooks docs give them (cursor.com/docs/agent/hooks, 2026-12:
# preToolUse, postToolUse and postToolUseFailure "fire for all tools", with tool_name,
# tool_input and tool_use_id); no Cursor runs here, so its file tools' input fields are not
# trusted: every tool but those that only read is taken as a shell (what changed during it).
CURSOR_TOOLS = ToolEvents(
    frozenset({"preToolUse"}), frozenset({"postToolUse", "postToolUseFailure"}),
    ("tool_name",), ("tool_input",), ("tool_use_id",),
    ToolNames({}, frozenset({"Read", "Grep", "Glob", "LS", "WebFetch", "WebSearch",
                             "SemanticSearch", "TodoWrite"})))

# Windsurf's action hooks (docs.windsurf.com/windsurf/cascade/hooks): pre/post_write_code
# (tool_info.file_path, edits), pre/post_run_command (command_line, cwd), pre/post_mcp_tool_use
# (mcp_server_name, mcp_tool_name, mcp_tool_arguments; the post adds mcp_result); the event's
# name is the tool; no call id, and execution_id is the turn's: a tool event is delivered
# under its timestamp.
WINDSURF_TOOLS = ToolEvents(
    frozenset({"pre_write_code", "pre_run_command", "pre_mcp_tool_use"}),
    frozenset({"post_write_code", "post_run_command", "post_mcp_tool_use"}),
    ("tool_name",), ("tool_info",), None,
    ToolNames({"write_code": ("file_path",)}, frozenset()),
    by_event={"pre_write_code": "write_code", "post_write_code": "write_code",
              "pre_run_command": "run_command", "post_run_command": "run_command",
              "pre_mcp_tool_use": "mcp_tool_use", "post_mcp_tool_use": "mcp_tool_use"},
    key_fields=("file_path", "command_line", "cwd", "mcp_server_name", "mcp_tool_name",
                "mcp_tool_arguments"),
    delivered=("timestamp",))

HOSTS: dict[str, Host] = {h.name: h for h in (
    Host("claude-code", frozenset({"UserPromptSubmit"}), frozenset({"Stop"}),
         "hook_event_name", ("session_id",), ("cwd",), ("prompt",), event_id=("prompt_id",),
         context="UserPromptSubmit", tools=CLAUDE_TOOLS),
    Host("codex", frozenset({"UserPromptSubmit"}), frozenset({"Stop"}),
         "hook_event_name", ("session_id",), ("cwd",), ("prompt",), event_id=("turn_id",),
         context="UserPromptSubmit", tools=CODEX_TOOLS),
    Host("codex-notify", frozenset(), frozenset({"agent-turn-complete"}),
         "type", ("thread-id",), ("cwd",), ("input-messages", 0),
         block=BLOCK_NONE, after_records_point=True, event_id=("turn-id",)),
    Host("cursor", frozenset({"beforeSubmitPrompt"}), frozenset({"stop"}),
         "hook_event_name", ("conversation_id",), ("workspace_roots", 0), ("prompt",),
         stdout=ALWAYS_JSON, block=BLOCK_CONTINUE, event_id=("generation_id",),
         tools=CURSOR_TOOLS),
    Host("gemini", frozenset({"BeforeAgent"}), frozenset({"AfterAgent"}),
         "hook_event_name", ("session_id",), ("cwd",), ("prompt",),
         stdout=JSON_ONLY, block=BLOCK_DECISION, event_id=("timestamp",),
         context="BeforeAgent", tools=GEMINI_TOOLS),
    Host("copilot", frozenset({"userPromptSubmitted"}), frozenset({"agentStop"}),
         None, ("sessionId",), ("cwd",), ("prompt",), block=BLOCK_HANDLED,
         event_id=("timestamp",), context="userPromptSubmitted", context_at_top=True,
         tools=COPILOT_TOOLS),
    Host("windsurf", frozenset({"pre_user_prompt"}), frozenset({"post_cascade_response"}),
         "agent_action_name", ("trajectory_id",), None, ("tool_info", "user_prompt"),
         block=BLOCK_EXIT_2, event_id=("execution_id",), tools=WINDSURF_TOOLS),
    Host("opencode", frozenset({"chat.message"}), frozenset({"session.idle"}),
         "hook_event_name", ("session_id",), ("cwd",), ("prompt",), event_id=("message_id",),
         plugin=True, tools=OPENCODE_TOOLS),
    Host("pi", frozenset({"before_agent_start", "input"}), frozenset({"agent_end"}),
         "hook_event_name", ("session_id",), ("cwd",), ("prompt",), event_id=("turn_id",),
         ends_by_id=True, plugin=True, tools=PI_TOOLS),
)}

GEMINI_EVENTS = frozenset({"BeforeAgent", "AfterAgent", "BeforeTool", "AfterTool", "BeforeModel",
                           "AfterModel", "BeforeToolSelection", "SessionStart", "SessionEnd",
                           "PreCompress", "Notification"})


def detect(event: dict[str, Any]) -> Host:
    """The host that sent `event`, from its shape (for `hook` without --host)."""
    if event.get("type") == "agent-turn-complete" or "thread-id" in event:
        return HOSTS["codex-notify"]
    if "agent_action_name" in event:
        return HOSTS["windsurf"]
    name = event.get("hook_event_name")
    if name is None:
        return HOSTS["copilot"] if "sessionId" in event else HOSTS["claude-code"]
    if "conversation_id" in event or "workspace_roots" in event:
        return HOSTS["cursor"]
    if name in GEMINI_EVENTS and ("timestamp" in event or name.startswith(("Before", "After"))):
        return HOSTS["gemini"]
    if "turn_id" in event:
        return HOSTS["codex"]
    return HOSTS["claude-code"]
