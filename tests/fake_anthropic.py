"""A stand-in for the model's API on a loopback port, for running the real Claude Code CLI end to end.

It answers every Messages API request with a stream, as the API does: a request that offers tools, in a
conversation with no tool result yet, gets one tool call (`Bash` with `command`); any other request gets the
text "done" (so a session makes one call and ends, whatever Claude Code adds after the result). Every request
body is kept, so a test can read what Claude Code sent the model: the context its hooks added included.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeModel:
    def __init__(self, command: str) -> None:
        self.command = command
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def reply(self, request: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        answered = any(
            isinstance(b, dict) and b.get("type") == "tool_result"
            for m in request.get("messages") or []
            if isinstance(m, dict) and isinstance(m.get("content"), list)
            for b in m["content"]
        )
        if not request.get("tools") or answered:
            return [{"type": "text", "text": "done"}], "end_turn"
        call = {"type": "tool_use", "id": "toolu_fake_1", "name": "Bash", "input": {"command": self.command}}
        return [call], "tool_use"

    def sent(self) -> list[str]:
        """Each request body as sent, in order."""
        with self.lock:
            return [json.dumps(r) for r in self.requests]


def _events(model: str, blocks: list[dict[str, Any]], stop: str) -> Iterator[tuple[str, dict[str, Any]]]:
    usage = {"input_tokens": 10, "output_tokens": 1}
    start = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": []}
    yield "message_start", {"type": "message_start", "message": {**start, "stop_reason": None, "usage": usage}}
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
            )
            delta = {"type": "text_delta", "text": b["text"]}
        else:
            shell = {**b, "input": {}}
            yield "content_block_start", {"type": "content_block_start", "index": i, "content_block": shell}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
        yield "content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}
    yield "message_stop", {"type": "message_stop"}


@contextmanager
def fake_model(command: str) -> Iterator[tuple[FakeModel, str]]:
    """A FakeModel serving on 127.0.0.1 (a free port) while the block runs; yields it and its base URL."""
    model = FakeModel(command)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                request = json.loads(body)
            except ValueError:
                request = {}
            with model.lock:
                model.requests.append(request)
            blocks, stop = model.reply(request)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for name, data in _events(str(request.get("model", "claude")), blocks, stop):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

        def do_GET(self) -> None:
            self.send_response(404)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield model, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
