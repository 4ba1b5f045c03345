"""A raw HTTP/1.1 upstream that answers each POST with canned bytes, exactly
as given: no JSON handling, no re-encoding, so the end-to-end tests can feed
Envoy and the plugin bodies no MCP SDK would send (malformed, truncated,
invalid UTF-8, compressed, cut mid-event).

The cases come from a JSON file written by the test:

    {"<name>": {"status": 200,
                "headers": [["content-type", "application/json"], ...],
                "body_b64": "...",
                "framing": "length" | "chunked" | "close",
                "chunk": 4096}}

`POST /<anything>/<name>` answers with case <name> (the last path segment).
Framing: `length` sends content-length; `chunked` sends chunks of `chunk`
bytes; `close` sends neither and ends the body by closing the connection
(how a server cut off mid-stream looks to Envoy). `"hold": SECONDS` (chunked
only) keeps the stream open that long after the body before ending it, as
a long-lived event stream does; `"pace": SECONDS` (chunked only) waits that
long after each chunk, as a server writing events one by one does.
`"gate": true` (chunked only) sends the status line and headers, then waits
until the test opens the case's gate with `POST /_gate/<name>` (sent to this
server directly, not through Envoy) before it sends the body's chunks; the
gate request is answered once they are written, so the test knows they are
on their way to Envoy. The end of the body (the last chunk) follows when the
test sends `POST /_release/<name>`, or `hold` seconds after the chunks,
whichever comes first. The request body is read and dropped. Unknown cases
answer 404.

Run: python raw_server.py PORT CASES.json
"""

from __future__ import annotations

import base64
import json
import socket
import sys
import threading
import time


def read_request(conn: socket.socket, buf: bytes) -> tuple[bytes, bytes] | None:
    """Reads one request; returns (request line + headers, leftover bytes)."""
    while b"\r\n\r\n" not in buf:
        more = conn.recv(65536)
        if not more:
            return None
        buf += more
    head, rest = buf.split(b"\r\n\r\n", 1)
    length = 0
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        # Skip chunks up to the terminating zero-size chunk and its blank line.
        while True:
            while b"\r\n" not in rest:
                more = conn.recv(65536)
                if not more:
                    return None
                rest += more
            size_line, rest = rest.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            while len(rest) < size + 2:
                more = conn.recv(65536)
                if not more:
                    return None
                rest += more
            if size == 0:
                # Envoy sends no request trailers: the blank line follows.
                return head, rest[2:]
            rest = rest[size + 2 :]
    while len(rest) < length:
        more = conn.recv(65536)
        if not more:
            return None
        rest += more
    return head, rest[length:]


def response_bytes(case: dict) -> tuple[bytes, bool]:
    """The wire bytes of a case and whether the connection closes after it."""
    body = base64.b64decode(case["body_b64"])
    status = case.get("status", 200)
    framing = case.get("framing", "length")
    lines = [f"HTTP/1.1 {status} X".encode()]
    for name, value in case.get("headers", []):
        lines.append(f"{name}: {value}".encode())
    if framing == "length":
        lines.append(b"content-length: %d" % len(body))
        out = b"\r\n".join(lines) + b"\r\n\r\n" + body
        return out, False
    if framing == "chunked":
        lines.append(b"transfer-encoding: chunked")
        out = b"\r\n".join(lines) + b"\r\n\r\n"
        step = case.get("chunk", 4096)
        for i in range(0, len(body), step):
            part = body[i : i + step]
            out += b"%x\r\n%s\r\n" % (len(part), part)
        return out + b"0\r\n\r\n", False
    lines.append(b"connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + body, True


class Gate:
    def __init__(self) -> None:
        self.opened = threading.Event()
        self.sent = threading.Event()
        self.released = threading.Event()


GATES: dict[str, Gate] = {}
GATES_LOCK = threading.Lock()


def gate(name: str) -> Gate:
    """The gate of the next response of case `name` (one per response: the
    gated response takes it out once its body has ended)."""
    with GATES_LOCK:
        return GATES.setdefault(name, Gate())


def handle(conn: socket.socket, cases: dict) -> None:
    with conn:
        buf = b""
        while True:
            got = read_request(conn, buf)
            if got is None:
                return
            head, buf = got
            target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode()
            name = target.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
            if target.startswith("/_gate/"):
                g = gate(name)
                g.opened.set()
                ok = g.sent.wait(60)
                conn.sendall(b"HTTP/1.1 %d X\r\ncontent-length: 0\r\n\r\n" % (200 if ok else 504))
                continue
            if target.startswith("/_release/"):
                with GATES_LOCK:
                    held = GATES.get(name)
                if held is not None:
                    held.released.set()
                conn.sendall(b"HTTP/1.1 %d X\r\ncontent-length: 0\r\n\r\n" % (200 if held else 404))
                continue
            case = cases.get(name)
            if case is None:
                conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                continue
            out, close = response_bytes(case)
            if case.get("gate"):
                g = gate(name)
                head_end = out.index(b"\r\n\r\n") + 4
                conn.sendall(out[:head_end])
                g.opened.wait()
                conn.sendall(out[head_end:].removesuffix(b"0\r\n\r\n"))
                g.sent.set()
                g.released.wait(case.get("hold"))
                with GATES_LOCK:
                    if GATES.get(name) is g:
                        del GATES[name]
                conn.sendall(b"0\r\n\r\n")
                continue
            if case.get("pace"):
                head_end = out.index(b"\r\n\r\n") + 4
                conn.sendall(out[:head_end])
                rest = out[head_end:]
                while rest and not rest.startswith(b"0\r\n\r\n"):
                    size_end = rest.index(b"\r\n")
                    end = size_end + 2 + int(rest[:size_end], 16) + 2
                    conn.sendall(rest[:end])
                    rest = rest[end:]
                    time.sleep(case["pace"])
                out = rest
            if case.get("hold"):
                # Everything but the last chunk now; the end after the hold.
                conn.sendall(out.removesuffix(b"0\r\n\r\n"))
                time.sleep(case["hold"])
                conn.sendall(b"0\r\n\r\n")
                continue
            conn.sendall(out)
            if close:
                conn.shutdown(socket.SHUT_WR)
                return


def main() -> None:
    port = int(sys.argv[1])
    with open(sys.argv[2]) as f:
        cases = json.load(f)
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(128)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=handle, args=(conn, cases), daemon=True).start()


if __name__ == "__main__":
    main()
