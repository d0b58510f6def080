"""Every request answered, even after the client closed stdin.

The MCP SDK's dispatcher cancels the requests still running when its read stream ends, so a
client that sends `tools/call undo` and closes stdin (a host shutting down, a script piping one
request in) would lose the reply of an undo that did happen. `Relay` sits between the stdio
transport and the server: it notes each request the client sent and each reply the server wrote,
and holds the end of the input back until every request has its reply (or was cancelled by the
client, which then wants none). The reply is written even if the client reads it much later.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.shared.message import SessionMessage

CANCELLED = "notifications/cancelled"


class Relay:
    """The streams to hand the server (`read`, `write`) in place of the transport's; `run`
    (a task) moves messages both ways until the server is done."""

    def __init__(self, read_stream: ObjectReceiveStream[Any],
                 write_stream: ObjectSendStream[SessionMessage]) -> None:
        self._from_client = read_stream
        self._to_client = write_stream
        self._read_in, self.read = anyio.create_memory_object_stream[Any](0)
        self.write, self._write_out = anyio.create_memory_object_stream[SessionMessage](0)
        self._open: set[Any] = set()      # ids of requests not answered yet
        self._answered = anyio.Event()

    async def run(self) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(self._client_to_server)
            group.start_soon(self._server_to_client)

    async def _client_to_server(self) -> None:
        async with self._read_in:
            async for item in self._from_client:
                if isinstance(item, SessionMessage):
                    self._note_in(item.message)
                await self._read_in.send(item)
            while self._open:   # stdin ended: the replies still owed go out first
                self._answered = anyio.Event()
                await self._answered.wait()

    async def _server_to_client(self) -> None:
        async with self._to_client, self._write_out:
            async for item in self._write_out:
                await self._to_client.send(item)
                message = item.message
                if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
                    self._settle(message.id)

    def _note_in(self, message: Any) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self._open.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == CANCELLED:
            params = message.params or {}
            self._settle(params.get("requestId", params.get("request_id")))

    def _settle(self, request_id: Any) -> None:
        self._open.discard(request_id)
        if not self._open:
            self._answered.set()
