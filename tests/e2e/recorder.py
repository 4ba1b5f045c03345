"""A recording forwarder between Envoy and an MCP server: every request it
receives is kept (method, path, headers, body) and forwarded to the server
unchanged, and the server's answer goes back as it came. A test reads
`requests` to see exactly what reached the server (a page call must never).

Runs in the test's own process, in a thread, on 127.0.0.1 and a free port;
`stop()` shuts its socket down.
"""

from __future__ import annotations

import http.client
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness import free_port


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Recorder:
    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.port = free_port()
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if self.headers.get("transfer-encoding", "").lower() == "chunked":
                    body = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            break
                        body += self.rfile.read(size)
                        self.rfile.readline()
                else:
                    body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                with recorder._lock:
                    recorder.requests.append(Seen(self.command, self.path, headers, body))
                conn = http.client.HTTPConnection("127.0.0.1", recorder.upstream_port, timeout=120)
                fwd = {k: v for k, v in self.headers.items() if k.lower() not in ("content-length", "transfer-encoding", "connection")}
                fwd["content-length"] = str(len(body))
                conn.request(self.command, self.path, body=body, headers=fwd)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_POST = _forward
            do_GET = _forward
            do_DELETE = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def snapshot(self) -> list[Seen]:
        with self._lock:
            return list(self.requests)

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
