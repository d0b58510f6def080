"""The files `undostore init` writes whole: Claude Code's command files (for discovery: the hook
answers `/undo` before it reaches the model), the OpenCode plugin and the Pi extension (each runs
`undostore hook --host H` with the event as JSON on stdin).

The Pi extension is TypeScript by name but plain JavaScript in body (valid TypeScript too), so
tests can run it with node, which cannot strip types.
"""

from __future__ import annotations

_CLAUDE_COMMAND = """\
---
description: {what}{more} (undostore)
argument-hint: "{hint}"
disable-model-invocation: true
---
The user typed `/{step}`. undostore's UserPromptSubmit hook does that before the prompt reaches
you; since you read this, the hook did not run here (it is not wired in this project, or
`undostore` is not on the PATH Claude Code runs hooks with). Change no files and do not try to
{step} by hand: tell the user to run `undostore init claude-code` in this project with
`undostore` on the PATH Claude Code uses, and that `undostore {step} --yes` in a terminal does
it now.
"""

CLAUDE_UNDO = _CLAUDE_COMMAND.format(what="Put the files back as they were before the last turn",
                                     more="; /undo N for N turns, /undo PATH for some files",
                                     hint="[N | turn K] [PATH...]", step="undo")
CLAUDE_REDO = _CLAUDE_COMMAND.format(what="Take back the last /undo", more="",
                                     hint="[N] [PATH...]", step="redo")

# Gemini CLI's custom commands (`.gemini/commands/*.toml`): `/undo` and `/redo` in its slash
# menu. Gemini submits the prompt as typed (`{{args}}`: N, turn K, --merge, paths...), which its
# BeforeAgent hook, undostore's, answers before it reaches the model.
_GEMINI_COMMAND = """\
# undostore: {what} (the BeforeAgent hook does it; the model never sees it)
description = "{what} (undostore)"
prompt = "/{step} {{{{args}}}}"
"""

# Gemini's slash menu cuts a description at the terminal's width: "(undostore)" stays in view.
GEMINI_UNDO = _GEMINI_COMMAND.format(what="Put the files back as they were before the last turn; "
                                          "/undo N, /undo PATH", step="undo")
GEMINI_REDO = _GEMINI_COMMAND.format(what="Take back the last /undo", step="redo")

_RUN_HOOK = """\
import { spawn } from "node:child_process";

// Run `undostore hook --host HOST` with `event` as JSON on stdin; resolves to its stdout and
// stderr (never rejects: a failed hook must not break the host).
function runHook(host, event, cwd) {
  return new Promise((resolve) => {
    let out = "";
    let err = "";
    let child;
    try {
      child = spawn("undostore", ["hook", "--host", host],
                    { cwd, stdio: ["pipe", "pipe", "pipe"], windowsHide: true });
    } catch (error) {
      resolve({ out: "", err: String(error) });
      return;
    }
    child.on("error", (error) => resolve({ out, err: err + String(error) }));
    child.stdout.on("data", (chunk) => { out += chunk; });
    child.stderr.on("data", (chunk) => { err += chunk; });
    child.on("close", () => resolve({ out, err }));
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(event));
  });
}

// An id of this event's own: the hook takes a second event with the same id for a duplicate
// delivery, and one without an id for a duplicate if it repeats the first within a moment, as
// two `/undo` sent back to back (Pi's RPC mode) do.
function eventId(kind) {
  return `${kind}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}

// The hook's JSON answer (null when it printed none).
function parse(out) {
  try {
    return out && out.trim() ? JSON.parse(out) : null;
  } catch (error) {
    return null;
  }
}

// The hook's last stderr line (what it says when something is wrong).
function lastLine(err) {
  return (err || "").trim().split("\\n").pop();
}
"""

OPENCODE_PLUGIN = """\
// undostore for OpenCode, written by `undostore init opencode` (delete it to unwire undostore).
// Each prompt records an undo point and each finished turn the files after it. A prompt that is
// /undo, /undo N or /redo (N) (`opencode run "/undo"`; the TUI's own /undo is OpenCode's) is
// done by undostore in this session: the line is shown (a toast in the TUI, stderr in
// `opencode run`) and the model gets, in the command's place, the note of which turns were
// taken back or applied again (OpenCode calls the model for every message: nothing of the
// command reaches it). Needs `undostore` on the PATH OpenCode runs with.
""" + _RUN_HOOK + """
import { spawnSync } from "node:child_process";

// `runHook`, waiting for it: for a turn's end where the host's process may exit as soon as the
// turn is over (`opencode run` does): a hook still running then would record the files later,
// with whatever the user changed meanwhile counted as the turn's.
function runHookNow(host, event, cwd) {
  try {
    const done = spawnSync("undostore", ["hook", "--host", host],
                           { cwd, input: JSON.stringify(event), encoding: "utf8",
                             windowsHide: true, maxBuffer: 1 << 20 });
    const failed = done.error ? String(done.error) : "";
    return { out: done.stdout || "", err: (done.stderr || "") + failed };
  } catch (error) {
    return { out: "", err: String(error) };
  }
}

const RUN_MODE = process.argv.includes("run");   // `opencode run`: no TUI to show a toast

// The text the user typed. `opencode run` quotes a message argument holding a space
// ("edit a" arrives as "\\"edit a\\""): a whole message so quoted is taken without them.
function promptText(parts) {
  const text = (parts || [])
    .filter((part) => part && part.type === "text" && !part.synthetic)
    .map((part) => part.text)
    .join("\\n");
  const quoted = /^"((?:[^"\\\\]|\\\\")*)"$/s.exec(text);
  return quoted ? quoted[1].replace(/\\\\"/g, '"') : text;
}

async function show(client, line, variant) {
  if (!line) return;
  if (RUN_MODE) {
    process.stderr.write(line + "\\n");
    return;
  }
  try {
    await client.tui.showToast({ body: { message: line, variant } });
  } catch (error) {
    process.stderr.write(line + "\\n");
  }
}

// Put `text` for the model in place of what the user typed.
function replaceText(parts, text) {
  let first = true;
  for (const part of parts || []) {
    if (part && part.type === "text" && !part.synthetic) {
      part.text = first ? text : "";
      first = false;
    }
  }
}

export const UndostorePlugin = async ({ client, directory, worktree }) => {
  const cwd = directory || worktree || process.cwd();
  async function toolEvent(name, input, args) {
    const { err } = await runHook("opencode", {
      hook_event_name: name, session_id: input && input.sessionID, tool_name: input && input.tool,
      tool_input: args, call_id: input && input.callID, cwd,
    }, cwd);
    await show(client, lastLine(err), "warning");
  }
  return {
    "chat.message": async (input, output) => {
      const parts = output && output.parts;
      const prompt = promptText(parts);
      const { out, err } = await runHook("opencode", {
        hook_event_name: "chat.message",
        session_id: input && input.sessionID,
        message_id: (output && output.message && output.message.id) || (input && input.messageID)
          || eventId("opencode"),
        cwd,
        prompt,
      }, cwd);
      const answer = parse(out);
      if (answer && answer.decision === "block") {   // the prompt was /undo or /redo: done
        await show(client, answer.reason, "success");
        replaceText(parts, answer.note || "undostore: the user's /undo or /redo changed no "
          + "file; reply with one short line and change nothing.");
        return;
      }
      await show(client, lastLine(err), "warning");
      // What the model must know since its last prompt (an undo in a terminal, say): a part
      // of the message after the user's text (OpenCode saves a part only with an id).
      const typed = (parts || []).find((part) => part && part.type === "text" && part.id);
      if (answer && answer.context && typed) {
        parts.splice(parts.indexOf(typed) + 1, 0,
                     { ...typed, id: typed.id + "u", text: answer.context, synthetic: true });
      }
    },
    // Before and after each tool call (awaited: the files are captured before the tool runs),
    // so that a turn is what its calls changed and what the user writes meanwhile is not.
    "tool.execute.before": (input, output) =>
      toolEvent("tool.execute.before", input, output && output.args),
    "tool.execute.after": (input) => toolEvent("tool.execute.after", input, input && input.args),
    event: async ({ event }) => {
      if (event && event.type === "session.idle") {
        const { err } = runHookNow("opencode", {
          hook_event_name: "session.idle",
          session_id: event.properties && event.properties.sessionID,
          cwd,
        }, cwd);
        await show(client, lastLine(err), "warning");
      }
    },
  };
};
"""

PI_EXTENSION = """\
// undostore for Pi, written by `undostore init pi` (delete it to unwire undostore).
// Each prompt records an undo point and each finished turn the files after it. /undo, /undo N
// and /redo (N) are commands: undostore takes the session's turns back (or applies them again)
// and the conversation moves with the files, to before the oldest turn taken back (or to the
// end of the newest applied again) in Pi's session tree, so the model goes on from the files
// as they are; nothing of the command reaches the model. Needs `undostore` on the PATH Pi runs
// with.
""" + _RUN_HOOK + """
const ENTRY = "undostore-turn";   // a turn's place in the session tree: { turn, start }
const MOVED = "undostore-moved";  // where an /undo or /redo left the conversation
let open = null;                  // the turn running now: { turn, before }

function sessionOf(ctx) {
  try {
    return ctx.sessionManager.getSessionId();
  } catch (error) {
    return undefined;
  }
}

// One line for the user: a notice in Pi's UI, else (print and JSON modes) on stderr.
function show(ctx, line, level) {
  if (!line) return;
  if (ctx.hasUI) ctx.ui.notify(line, level);
  else process.stderr.write(line + "\\n");
}


// The entry on the current branch whose parent is `before` (null: the branch's first entry).
function firstAfter(ctx, before) {
  const branch = ctx.sessionManager.getBranch();
  const found = branch.find((entry) => (entry.parentId || null) === (before || null));
  return found ? found.id : null;
}

// Where each turn this extension saw began and ended, by the turn id undostore knows it by.
function turnEntries(ctx) {
  const out = new Map();
  for (const entry of ctx.sessionManager.getEntries()) {
    if (entry.type === "custom" && entry.customType === ENTRY && entry.data && entry.data.turn) {
      out.set(entry.data.turn, { start: entry.data.start, end: entry.id });
    }
  }
  return out;
}

// Move the conversation with the files: after an undo, to just before the oldest turn taken
// back (navigating to a turn's first entry leaves the leaf on its parent); after a redo, to
// the end of the newest turn applied again. False where a turn is not in this session's tree.
async function rewind(ctx, step, turns) {
  if (!turns.length) return true;
  const known = turnEntries(ctx);
  const places = turns.map((turn) => known.get(turn.event_id));
  if (places.some((place) => !place || !place.start)) return false;
  const target = step === "undo" ? places[places.length - 1].start : places[places.length - 1].end;
  await ctx.waitForIdle();
  const moved = await ctx.navigateTree(target, { summarize: false });
  if (moved && moved.cancelled) return false;
  // Pi puts a prompt navigated back over into its editor: an undo means it is gone.
  if (step === "undo" && ctx.hasUI) ctx.ui.setEditorText("");
  // Pi reopens a session at its last entry: one here keeps the move (print mode, -c).
  pi.appendEntry(MOVED, { step, turns: turns.map((turn) => turn.event_id) });
  return true;
}

async function command(step, args, ctx) {
  const typed = `/${step}${args && args.trim() ? " " + args.trim() : ""}`;
  const { out, err } = await runHook("pi", {
    hook_event_name: "input", session_id: sessionOf(ctx), cwd: ctx.cwd, prompt: typed,
    turn_id: eventId("pi-command"),
  }, ctx.cwd);
  const answer = parse(out);
  if (!answer || answer.decision !== "block") {
    show(ctx, lastLine(err) || `undostore: ${step}: no answer from undostore`, "error");
    return;
  }
  let moved = false;
  try {
    // No turns: nothing changed, or part of a turn or a middle one: the conversation stays.
    moved = (answer.turns || []).length > 0 && await rewind(ctx, step, answer.turns);
  } catch (error) {
    moved = false;
  }
  if (!moved && answer.note) {
    // The conversation could not move with the files: the model is told instead.
    pi.sendMessage({ customType: "undostore-note", content: answer.note, display: false });
  }
  show(ctx, answer.reason, "info");   // last: Pi's own notice of the move would hide it
}

let pi = null;

export default function (api) {
  pi = api;
  pi.registerCommand("undo", {
    description: "Put the files back as before the last turn, and the conversation (/undo N)",
    handler: (args, ctx) => command("undo", args, ctx),
  });
  pi.registerCommand("redo", {
    description: "Take back the last /undo (/redo N)",
    handler: (args, ctx) => command("redo", args, ctx),
  });

  pi.on("before_agent_start", async (event, ctx) => {
    const turn = eventId("pi");
    open = { turn, before: ctx.sessionManager.getLeafId() };
    const { out, err } = await runHook("pi", {
      hook_event_name: "before_agent_start", session_id: sessionOf(ctx), cwd: ctx.cwd,
      prompt: event.prompt, turn_id: turn,
    }, ctx.cwd);
    show(ctx, lastLine(err), "warning");
    const answer = parse(out);
    // What the model must know since its last prompt (an undo in a terminal, say).
    if (answer && answer.context) {
      return { message: { customType: "undostore-note", content: answer.context, display: false } };
    }
  });

  // Before and after each tool call (awaited: the files are captured before the tool runs),
  // so that a turn is what its calls changed and what the user writes meanwhile is not.
  for (const [name, input] of [["tool_call", "input"], ["tool_result", "input"]]) {
    pi.on(name, async (event, ctx) => {
      const { err } = await runHook("pi", {
        hook_event_name: name, session_id: sessionOf(ctx), cwd: ctx.cwd,
        tool_name: event.toolName, tool_input: event[input], tool_call_id: event.toolCallId,
      }, ctx.cwd);
      show(ctx, lastLine(err), "warning");
    });
  }

  pi.on("agent_end", async (_event, ctx) => {
    const turn = open;
    open = null;
    // Before anything is awaited: print mode may end its session while this handler waits
    // (node itself waits for the hook to end before it exits).
    if (turn) pi.appendEntry(ENTRY, { turn: turn.turn, start: firstAfter(ctx, turn.before) });
    const { err } = await runHook("pi", {
      hook_event_name: "agent_end", session_id: sessionOf(ctx), cwd: ctx.cwd,
      turn_id: turn ? turn.turn : undefined,
    }, ctx.cwd);
    try {
      show(ctx, lastLine(err), "warning");
    } catch (error) {
      if (err) process.stderr.write(lastLine(err) + "\\n");   // the session has ended
    }
  });
}
"""
