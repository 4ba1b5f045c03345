"""An HTTP/1.1 upstream that answers each request with one of a few large
canned responses, built once at start: the memory tests send dozens of
responses of several MiB at once, and `raw_server.py` builds each answer
anew (base64 in JSON), which would hold a copy per request.

The cases come from a JSON file written by the test:

    {"<name>": {"status": 200,
                "headers": [["content-type", "application/json"], ...],
                "file": "/path/to/body",
                "framing": "length" | "chunked",
                "chunk": 65536}}

A request whose path's last segment is <name> (any method) gets that case;
others get 404. Keep-alive; one thread per connection. The request body is
read and dropped.

Run: python bulk_server.py PORT CASES.json
"""

from __future__ import annotations

import json
import socket
import sys
import threading


def wire(case: dict) -> bytes:
    with open(case["file"], "rb") as f:
        body = f.read()
    lines = [b"HTTP/1.1 %d X" % case.get("status", 200)]
    for name, value in case.get("headers", []):
        lines.append(f"{name}: {value}".encode())
    if case.get("framing", "length") == "length":
        lines.append(b"content-length: %d" % len(body))
        return b"\r\n".join(lines) + b"\r\n\r\n" + body
    lines.append(b"transfer-encoding: chunked")
    out = [b"\r\n".join(lines) + b"\r\n\r\n"]
    step = case.get("chunk", 65536)
    for i in range(0, len(body), step):
        part = body[i : i + step]
        out.append(b"%x\r\n%s\r\n" % (len(part), part))
    out.append(b"0\r\n\r\n")
    return b"".join(out)


def read_request(conn: socket.socket, buf: bytes) -> tuple[bytes, bytes] | None:
    """One request (head, leftover bytes); its body is skipped."""
    while b"\r\n\r\n" not in buf:
        more = conn.recv(65536)
        if not more:
            return None
        buf += more
    head, rest = buf.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        more = conn.recv(65536)
        if not more:
            return None
        rest += more
    return head, rest[length:]


def handle(conn: socket.socket, answers: dict[str, bytes]) -> None:
    with conn:
        buf = b""
        while True:
            got = read_request(conn, buf)
            if got is None:
                return
            head, buf = got
            target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode()
            name = target.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
            answer = answers.get(name, b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
            try:
                conn.sendall(answer)
            except OSError:
                return


def main() -> None:
    port = int(sys.argv[1])
    with open(sys.argv[2]) as f:
        answers = {name: wire(case) for name, case in json.load(f).items()}
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(256)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=handle, args=(conn, answers), daemon=True).start()


if __name__ == "__main__":
    main()
