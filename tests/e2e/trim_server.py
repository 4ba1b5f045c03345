"""The demo MCP server (examples/demo_server.py, same tools) for the trim
tests, with two additions that stay out of the shared demo server:

- every request body that reaches it is recorded, and `GET /_requests`
  returns them as a JSON array of strings (what the upstream MCP server
  actually saw, after the proxy);
- `--sse` answers in the SDK's default event-stream mode instead of JSON;
- one more tool, `users_and_orders`: a result of two text blocks (the
  `list_users` table, pretty, then a `search_orders` page, compact);
- `directory`, whose own schema declares `expected_info` (the plugin's
  intent argument): the argument is the tool's, and must reach it.

Run: python tests/e2e/trim_server.py --port N [--sse]   (127.0.0.1; stop it by pid)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from demo_server import build_server, orders, users  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402


def build() -> Any:
    server = build_server()

    @server.tool(description="Users and a page of orders: two text blocks.")
    def users_and_orders() -> CallToolResult:
        page = {"total": 120, "page": 1, "items": orders(120)[:30]}
        return CallToolResult(
            content=[
                TextContent(type="text", text=json.dumps(users(40), indent=2, ensure_ascii=False)),
                TextContent(type="text", text=json.dumps(page)),
            ]
        )

    @server.tool(description="The user directory; expected_info is this tool's own argument (a saved-search label).")
    def directory(expected_info: str = "") -> CallToolResult:
        body = {"label": expected_info, "users": users(40)}
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(body, indent=2, ensure_ascii=False))])

    return server


class Recorder:
    """ASGI middleware: records request bodies; serves them at /_requests."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.bodies: list[str] = []

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/_requests":
            body = json.dumps(self.bodies).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if body:
            self.bodies.append(body.decode("utf-8", errors="replace"))
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--sse", action="store_true", help="answer tools/call as text/event-stream")
    args = parser.parse_args()
    app = build().streamable_http_app(json_response=not args.sse, stateless_http=True, host=args.host)
    uvicorn.run(Recorder(app), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
