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
argument-hint: "[N]"
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
                                     more="; /undo N for N turns", step="undo")
CLAUDE_REDO = _CLAUDE_COMMAND.format(what="Take back the last /undo", more="", step="redo")

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
"""

OPENCODE_PLUGIN = """\
// undostore for OpenCode, written by `undostore init opencode` (delete it to unwire undostore).
// Each prompt records an undo point and each finished turn the files after it: take a turn back
// with `undostore undo` in a terminal (OpenCode's own /undo is OpenCode's, and never reaches a
// plugin). Needs `undostore` on the PATH OpenCode runs with.
""" + _RUN_HOOK + """
function promptText(parts) {
  return (parts || [])
    .filter((part) => part && part.type === "text" && !part.synthetic)
    .map((part) => part.text)
    .join("\\n");
}

export const UndostorePlugin = async ({ directory, worktree }) => {
  const cwd = directory || worktree || process.cwd();
  return {
    "chat.message": async (input, output) => {
      await runHook("opencode", {
        hook_event_name: "chat.message",
        session_id: input && input.sessionID,
        cwd,
        prompt: promptText(output && output.parts),
      }, cwd);
    },
    event: async ({ event }) => {
      if (event && event.type === "session.idle") {
        await runHook("opencode", {
          hook_event_name: "session.idle",
          session_id: event.properties && event.properties.sessionID,
          cwd,
        }, cwd);
      }
    },
  };
};
"""

PI_EXTENSION = """\
// undostore for Pi, written by `undostore init pi` (delete it to unwire undostore).
// Each prompt records an undo point and each finished turn the files after it; /undo, /undo N
// and /redo are done by undostore in this session and never reach the model. Needs `undostore`
// on the PATH Pi runs with.
""" + _RUN_HOOK + """
const COMMAND = /^\\s*\\/(?:undostore:)?(?:undo|redo)(?:\\s+\\d+)?\\s*$/i;

function sessionOf(ctx) {
  try {
    return ctx.sessionManager.getSessionId();
  } catch (error) {
    return undefined;
  }
}

function warn(ctx, err) {
  const line = (err || "").trim().split("\\n").pop();
  if (line && ctx.hasUI) ctx.ui.notify(line, "warning");
}

export default function (pi) {
  pi.on("input", async (event, ctx) => {
    if (!COMMAND.test(event.text || "")) return { action: "continue" };
    const { out, err } = await runHook("pi", {
      hook_event_name: "input", session_id: sessionOf(ctx), cwd: ctx.cwd, prompt: event.text,
    }, ctx.cwd);
    let answer = null;
    try {
      answer = JSON.parse(out);
    } catch (error) {
      answer = null;
    }
    if (answer && answer.decision === "block") {
      if (ctx.hasUI) ctx.ui.notify(answer.reason, "info");
      return { action: "handled" };
    }
    warn(ctx, err);
    return { action: "continue" };
  });

  pi.on("before_agent_start", async (event, ctx) => {
    const { err } = await runHook("pi", {
      hook_event_name: "before_agent_start", session_id: sessionOf(ctx), cwd: ctx.cwd,
      prompt: event.prompt,
    }, ctx.cwd);
    warn(ctx, err);
  });

  pi.on("agent_end", async (_event, ctx) => {
    const { err } = await runHook("pi", {
      hook_event_name: "agent_end", session_id: sessionOf(ctx), cwd: ctx.cwd,
    }, ctx.cwd);
    warn(ctx, err);
  });
}
"""
