"""A scripted model on 127.0.0.1 for the real-host tests: the Anthropic Messages API with
streaming (Claude Code), Gemini's `generateContent` / `streamGenerateContent` (Gemini CLI),
OpenAI Chat Completions (Pi, OpenCode) and Responses (Codex), answering from a script, never
from timing.

Each request's body is logged (`requests`), which is how a test sees what the model received.
A conversation reaching a new prompt (its user prompts so far, counted, have not been answered
yet) gets that prompt's scripted tool calls (the script maps a prompt's whole text to a list
of `Tool` calls, all sent in one reply; a note that names the prompt is not the prompt); the
request that brings their results back, or a prompt with no script, gets a short text and
`end_turn`. Side requests a host makes (titles, token counts, Gemini's JSON-schema questions
such as its model router's) get a plain answer that fits.

    with ModelServer({"add b": [Tool("Write", {"file_path": ..., "content": ...})]}) as model:
        env["ANTHROPIC_BASE_URL"] = model.url
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

# What Copilot CLI puts before each prompt it sends: the time.
_DATETIME = re.compile(r"^\s*<current_datetime>.*?</current_datetime>\s*", re.DOTALL)


class Tool(NamedTuple):
    name: str
    input: dict[str, Any]


DONE_TEXT = "Done."


def _sample(schema: dict[str, Any]) -> Any:
    """A value fitting a JSON schema (a host's structured side questions)."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {name: _sample(sub) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    return {"string": "scripted", "integer": 1, "number": 1, "boolean": False}.get(kind)


def gemini_prompts(body: dict[str, Any]) -> tuple[str, ...]:
    """The user's texts in a logged Gemini request body, oldest first (hook context included,
    as the model receives it)."""
    return tuple(part["text"] for content in body.get("contents", [])
                 if content.get("role") == "user" for part in content.get("parts", [])
                 if isinstance(part, dict) and isinstance(part.get("text"), str)
                 and not part["text"].startswith("<hook_context>"))


def received_texts(body: dict[str, Any]) -> list[str]:
    """Every text block of every user message in a logged request body: Anthropic Messages,
    Gemini, OpenAI Chat Completions or Responses (its `input` items), less the time Copilot CLI
    puts before a prompt."""
    return [_DATETIME.sub("", text) for text in _user_texts(body)]


def _user_texts(body: dict[str, Any]) -> list[str]:
    if isinstance(body.get("input"), list):
        return [block.get("text", "") for item in body["input"]
                if isinstance(item, dict) and item.get("role") == "user"
                for block in (item.get("content") or [])
                if isinstance(block, dict) and block.get("type") in ("input_text", "text")]
    if "contents" in body:
        return [part["text"] for content in body["contents"] if content.get("role") == "user"
                for part in content.get("parts", [])
                if isinstance(part, dict) and isinstance(part.get("text"), str)]
    out = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [b.get("text", "") for b in content
                    if isinstance(b, dict) and b.get("type") == "text"]
    return out


# A Responses API tool that takes free text, not JSON arguments (Codex's `apply_patch`): its
# Tool's input is {FREEFORM: the text}.
FREEFORM = "freeform-input"


def _response_call(tool: Tool, ident: str) -> dict[str, Any]:
    """One Responses API tool call item: a function call, or a custom (free-text) tool call."""
    if FREEFORM in tool.input:
        return {"type": "custom_tool_call", "id": f"ctc_{ident}", "call_id": f"call_{ident}",
                "name": tool.name, "input": tool.input[FREEFORM], "status": "completed"}
    return {"type": "function_call", "id": f"fc_{ident}", "call_id": f"call_{ident}",
            "name": tool.name, "arguments": json.dumps(tool.input), "status": "completed"}


class ModelServer:
    """The server, run on a thread while used as a context manager."""

    def __init__(self, script: dict[str, list[Tool]],
                 before_text: Callable[[tuple[str, ...]], None] | None = None) -> None:
        self.script = script
        # Run before each text reply (every API served), given the conversation's prompts so
        # far: the turn's calls are done, and the model holds its answer, as the user goes on
        # working.
        self.before_text = before_text
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._calls = 0
        self._served: set[tuple[str, ...]] = set()   # conversations (their prompts) answered
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:   # noqa: N802 (http.server's name)
                self._json({"data": [], "has_more": False})

            def do_HEAD(self) -> None:   # noqa: N802
                self.send_response(200)
                self.end_headers()

            def do_POST(self) -> None:   # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                with server._lock:
                    server.requests.append({"path": self.path, "body": body})
                if "count_tokens" in self.path:
                    self._json({"input_tokens": 10})
                    return
                if ":generateContent" in self.path or ":streamGenerateContent" in self.path:
                    self._gemini(body)
                    return
                if ":countTokens" in self.path:
                    self._json({"totalTokens": 10})
                    return
                if self.path.split("?")[0].endswith("/chat/completions"):
                    self._chat(body)
                    return
                if self.path.split("?")[0].endswith("/responses"):
                    self._responses(body)
                    return
                if not self.path.split("?")[0].endswith("/messages"):
                    self._json({})
                    return
                blocks = server.reply(body)
                if body.get("stream"):
                    self._stream(body, blocks)
                else:
                    self._json(server.message(body, blocks))

            def _gemini(self, body: dict[str, Any]) -> None:
                doc = {"candidates": [{"content": {"role": "model",
                                                   "parts": server.gemini_reply(body)},
                                       "finishReason": "STOP", "index": 0}],
                       "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 10,
                                         "totalTokenCount": 20},
                       "modelVersion": "scripted"}
                if "alt=sse" not in self.path:
                    self._json(doc)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                self.wfile.write(f"data: {json.dumps(doc)}\r\n\r\n".encode())
                self.wfile.flush()

            def _chat(self, body: dict[str, Any]) -> None:
                chunks = server.chat_chunks(body)
                if not body.get("stream"):
                    self._json(server.chat_whole(body, chunks))
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _responses(self, body: dict[str, Any]) -> None:
                events = server.response_events(body)
                if not body.get("stream"):
                    self._json(events[-1]["response"])
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for event in events:
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                                     .encode())
                self.wfile.flush()

            def _json(self, doc: dict[str, Any]) -> None:
                data = json.dumps(doc).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for event in server.events(body, blocks):
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                                     .encode())
                self.wfile.flush()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _tools_for(self, prompts: tuple[str, ...], offered: bool) -> list[Tool]:
        """The scripted tool calls of the newest prompt, the first time a conversation reaches
        it (its prompts so far are the key); none when no tools are offered."""
        with self._lock:
            if not prompts or not offered or prompts in self._served:
                return []
            self._served.add(prompts)
        typed = prompts[-1].strip().strip('"')   # `opencode run` quotes a prompt with spaces
        return next((calls for text, calls in self.script.items() if text == typed), [])

    def reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """Anthropic content blocks answering `body`: the tool calls, else a short text."""
        prompts = tuple(t for t in received_texts(body)
                        if not t.lstrip().startswith("<system-reminder>"))
        tools = self._tools_for(prompts, bool(body.get("tools")))
        with self._lock:
            self._calls += 1
            call = self._calls
        if not tools and self.before_text is not None:
            self.before_text(prompts)
        return [{"type": "tool_use", "id": f"toolu_{call}_{i}", "name": t.name,
                 "input": t.input} for i, t in enumerate(tools)] or [
            {"type": "text", "text": DONE_TEXT}]

    def gemini_reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """Gemini parts answering `body`: JSON fitting the schema of a structured question,
        the tool calls, else a short text."""
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
            return [{"text": json.dumps(_sample(schema))}]
        prompts = gemini_prompts(body)
        tools = self._tools_for(prompts, bool(body.get("tools")))
        if not tools and self.before_text is not None:
            self.before_text(prompts)
        return [{"functionCall": {"name": t.name, "args": t.input}} for t in tools] or [
            {"text": DONE_TEXT}]

    def chat_chunks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """OpenAI Chat Completions stream chunks answering `body`: the tool calls (one chunk
        each), else a short text; then the finish reason and the usage."""
        prompts = tuple(received_texts(body))
        tools = self._tools_for(prompts, bool(body.get("tools")))
        with self._lock:
            self._calls += 1
            call = self._calls
        if not tools and self.before_text is not None:
            self.before_text(prompts)
        base = {"id": f"chatcmpl-{call}", "object": "chat.completion.chunk", "created": 0,
                "model": body.get("model", "scripted")}
        deltas: list[dict[str, Any]] = [
            {"role": "assistant", "tool_calls": [
                {"index": i, "id": f"call_{call}_{i}", "type": "function",
                 "function": {"name": t.name, "arguments": json.dumps(t.input)}}]}
            for i, t in enumerate(tools)] or [{"role": "assistant", "content": DONE_TEXT}]
        finish = "tool_calls" if tools else "stop"
        return [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
                for d in deltas] + [
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**base, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 10,
                                              "total_tokens": 20}}]

    def response_events(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """OpenAI Responses stream events answering `body` (Codex): a function call item per
        tool call, else one message item with a short text; then `response.completed`."""
        prompts = tuple(received_texts(body))
        tools = self._tools_for(prompts, bool(body.get("tools")))
        with self._lock:
            self._calls += 1
            call = self._calls
        if not tools and self.before_text is not None:
            self.before_text(prompts)
        items: list[dict[str, Any]] = [_response_call(t, f"{call}_{i}")
                                       for i, t in enumerate(tools)] or [
            {"type": "message", "id": f"msg_{call}", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": DONE_TEXT, "annotations": []}]}]
        response = {"id": f"resp_{call}", "object": "response", "created_at": 0,
                    "model": body.get("model", "scripted"), "status": "in_progress",
                    "output": []}
        events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
        for index, item in enumerate(items):
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": item})
            if item["type"] == "message":
                events.append({"type": "response.output_text.delta", "item_id": item["id"],
                               "output_index": index, "content_index": 0,
                               "delta": DONE_TEXT})
            events.append({"type": "response.output_item.done", "output_index": index,
                           "item": item})
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 20}
        events.append({"type": "response.completed",
                       "response": {**response, "status": "completed", "output": items,
                                    "usage": usage}})
        return events

    @staticmethod
    def chat_whole(body: dict[str, Any], chunks: list[dict[str, Any]]) -> dict[str, Any]:
        """The same answer as one Chat Completions object (a request without `stream`)."""
        deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
        calls = [call for d in deltas for call in d.get("tool_calls", [])]
        text = "".join(d.get("content") or "" for d in deltas)
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"}
                                     for c in calls]
        return {"id": chunks[0]["id"], "object": "chat.completion", "created": 0,
                "model": body.get("model", "scripted"),
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": chunks[-1]["usage"]}

    @staticmethod
    def message(body: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
        stop = "tool_use" if blocks and blocks[0]["type"] == "tool_use" else "end_turn"
        return {"id": "msg_scripted", "type": "message", "role": "assistant",
                "model": body.get("model", "scripted"), "content": blocks,
                "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 10}}

    @classmethod
    def events(cls, body: dict[str, Any], blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        whole = cls.message(body, blocks)
        start = {**whole, "content": [], "stop_reason": None}
        out: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                out += [{"type": "content_block_start", "index": index,
                         "content_block": {"type": "text", "text": ""}},
                        {"type": "content_block_delta", "index": index,
                         "delta": {"type": "text_delta", "text": block["text"]}}]
            else:
                out += [{"type": "content_block_start", "index": index,
                         "content_block": {**block, "input": {}}},
                        {"type": "content_block_delta", "index": index,
                         "delta": {"type": "input_json_delta",
                                   "partial_json": json.dumps(block["input"])}}]
            out.append({"type": "content_block_stop", "index": index})
        out += [{"type": "message_delta",
                 "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                 "usage": {"output_tokens": 10}},
                {"type": "message_stop"}]
        return out
