"""A local HTTP server speaking the OpenAI chat-completions protocol, with scripted replies.

Tests start it, point litellm at it (`openai/<name>` with `api_base`), and script what each
request gets: a reply computed from the prompt, an HTTP error, or a reply that comes too late.
Every request body is kept, so tests can read exactly what left the process.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[list[dict[str, str]]], str]


@dataclass
class Scripted:
    """One request's fate: `reply(messages)` as the content, after `delay_s`, or `status`."""

    reply: Responder | None = None
    status: int = 200
    delay_s: float = 0.0
    prompt_tokens: int = 1
    """What the reply's `usage` says the prompt cost."""


@dataclass
class ChatServer:
    script: list[Scripted] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def api_base(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> ChatServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                step = server.script.pop(0) if server.script else Scripted(status=503)
                if step.delay_s:
                    time.sleep(step.delay_s)
                if step.status != 200 or step.reply is None:
                    self._send(step.status, {"error": {"message": "scripted failure"}})
                    return
                content = step.reply(body["messages"])
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "scripted"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": step.prompt_tokens,
                            "completion_tokens": 1,
                            "total_tokens": step.prompt_tokens + 1,
                        },
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout test)

            def log_message(self, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
