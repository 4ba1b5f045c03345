"""A minimal HTTP/1.1 upstream that answers every POST with one fixed
JSON-RPC tools/call result (a 40-row table), sent chunked and followed by a
trailer field. Real MCP SDKs do not send trailers; HTTP/2 servers and
HTTP/1.1 servers behind a cluster with `enable_trailers` can.

Run: python trailer_server.py PORT
"""

from __future__ import annotations

import json
import socket
import sys
import threading

TEXT = json.dumps([{"id": i, "name": f"user {i}", "role": "admin", "active": True} for i in range(40)], indent=2)
BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": TEXT}], "isError": False}}).encode()


def handle(conn: socket.socket) -> None:
    with conn:
        data = b""
        while b"\r\n\r\n" not in data:
            more = conn.recv(65536)
            if not more:
                return
            data += more
        head, rest = data.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            rest += conn.recv(65536)
        half = len(BODY) // 2
        out = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\ntrailer: x-digest\r\n\r\n"
        for part in (BODY[:half], BODY[half:]):
            out += b"%x\r\n%s\r\n" % (len(part), part)
        out += b"0\r\nx-digest: demo\r\n\r\n"
        conn.sendall(out)


def main() -> None:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", int(sys.argv[1])))
    server.listen()
    while True:
        conn, _ = server.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
