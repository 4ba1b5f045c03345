"""An upstream that misbehaves on purpose, over HTTP/1.1 or HTTP/2 (h2c with
prior knowledge, told apart by the connection preface): it ends bodies with
trailers, cuts them short, and echoes what it received. Real MCP SDKs do
none of this; HTTP/2 servers and HTTP/1.1 servers behind a cluster with
`enable_trailers` can, and a crashing server cuts bodies short.

The cases come from a JSON file written by the test:

    {"<name>": {"status": 200,
                "content_type": "application/json",
                "body_b64": "...",
                "framing": "length" | "chunked",   (HTTP/1.1; HTTP/2 sends
                                                    content-length for "length")
                "chunk": 4096,              bytes per chunk / DATA frame
                "trailers": [["x-digest", "demo"]],
                "announce": true,           HTTP/1.1: a `trailer:` header
                "cut": 5099,                send this many body bytes, then
                                            close the connection (HTTP/1.1)
                                            or reset the stream (HTTP/2)
                "pause_ms": 0,              wait this long before the last
                                            part (trailers, or the cut)
                "release": false,           after the body, wait until
                                            `POST /_release/<name>`, then
                                            send "tail_b64" and end
                "echo": false}}             answer with what was received

`POST /<anything>/<name>` answers with case <name>. An `echo` case answers a
JSON-RPC result whose text is `{"body_b64": ..., "trailers": [...]}`, the
request body and trailer fields exactly as they arrived. `release` (HTTP/1.1)
lets a test see what reached the client while the upstream sends nothing.

Run: python misbehaving_server.py PORT CASES.json
"""

from __future__ import annotations

import base64
import json
import socket
import sys
import threading
import time

import h2.config
import h2.connection
import h2.errors
import h2.events

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

RELEASES: dict[str, threading.Event] = {}
RELEASES_LOCK = threading.Lock()


def release_event(name: str) -> threading.Event:
    with RELEASES_LOCK:
        return RELEASES.setdefault(name, threading.Event())


def echo_body(body: bytes, trailers: list[tuple[str, str]]) -> bytes:
    text = json.dumps({"body_b64": base64.b64encode(body).decode(), "trailers": trailers})
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}}).encode()


def case_body(case: dict, request: bytes, trailers: list[tuple[str, str]]) -> bytes:
    if case.get("echo"):
        return echo_body(request, trailers)
    return base64.b64decode(case["body_b64"])


def pause(case: dict) -> None:
    time.sleep(case.get("pause_ms", 0) / 1000)


# --- HTTP/1.1 ------------------------------------------------------------------------


class Reader:
    def __init__(self, conn: socket.socket, buf: bytes):
        self.conn, self.buf = conn, buf

    def fill(self) -> bool:
        more = self.conn.recv(65536)
        self.buf += more
        return bool(more)

    def line(self) -> bytes | None:
        while b"\r\n" not in self.buf:
            if not self.fill():
                return None
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exactly(self, n: int) -> bytes | None:
        while len(self.buf) < n:
            if not self.fill():
                return None
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def read_http1_request(r: Reader) -> tuple[str, bytes, list[tuple[str, str]]] | None:
    request_line = r.line()
    if request_line is None:
        return None
    headers = []
    while (line := r.line()) not in (None, b""):
        name, _, value = line.partition(b":")
        headers.append((name.strip().lower().decode(), value.strip().decode()))
    target = request_line.split(b" ")[1].decode()
    get = dict(headers).get
    body, trailers = b"", []
    if "chunked" in (get("transfer-encoding") or "").lower():
        while True:
            size_line = r.line()
            if size_line is None:
                return None
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                while (line := r.line()) not in (None, b""):
                    name, _, value = line.partition(b":")
                    trailers.append((name.strip().lower().decode(), value.strip().decode()))
                break
            body += r.exactly(size) or b""
            r.line()
    else:
        body = r.exactly(int(get("content-length") or 0)) or b""
    return target, body, trailers


def serve_http1(conn: socket.socket, buf: bytes, cases: dict) -> None:
    r = Reader(conn, buf)
    while True:
        got = read_http1_request(r)
        if got is None:
            return
        target, request, request_trailers = got
        name = target.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        if target.startswith("/_release/"):
            release_event(name).set()
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            continue
        case = cases.get(name)
        if case is None:
            conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
            continue
        body = case_body(case, request, request_trailers)
        trailers = case.get("trailers") or []
        cut = case.get("cut")
        head = [f"HTTP/1.1 {case.get('status', 200)} X", f"content-type: {case['content_type']}"]
        chunked = case.get("framing", "length") == "chunked"
        if chunked:
            head.append("transfer-encoding: chunked")
            if case.get("announce") and trailers:
                head.append("trailer: " + ", ".join(n for n, _ in trailers))
        else:
            head.append(f"content-length: {len(body)}")
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sent = body if cut is None else body[:cut]
        step = case.get("chunk", 4096)
        for i in range(0, len(sent), step):
            part = sent[i : i + step]
            conn.sendall(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
        pause(case)
        if cut is not None:
            conn.shutdown(socket.SHUT_RDWR)
            return
        if case.get("release"):
            event = release_event(name)
            event.wait(30)
            event.clear()
            tail = base64.b64decode(case.get("tail_b64", ""))
            if tail:
                conn.sendall(b"%x\r\n%s\r\n" % (len(tail), tail) if chunked else tail)
        if chunked:
            fields = "".join(f"{n}: {v}\r\n" for n, v in trailers)
            conn.sendall(b"0\r\n" + fields.encode() + b"\r\n")


# --- HTTP/2 --------------------------------------------------------------------------


def serve_http2(conn: socket.socket, buf: bytes, cases: dict) -> None:
    h2c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    h2c.initiate_connection()
    conn.sendall(h2c.data_to_send())
    streams: dict[int, dict] = {}
    data = buf
    while True:
        if not data:
            data = conn.recv(65536)
            if not data:
                return
        for event in h2c.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                streams[event.stream_id] = {"path": dict(event.headers)[":path"], "body": b"", "trailers": []}
            elif isinstance(event, h2.events.DataReceived):
                streams[event.stream_id]["body"] += event.data
                h2c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.TrailersReceived):
                streams[event.stream_id]["trailers"] = [(n, v) for n, v in event.headers]
            if isinstance(event, h2.events.StreamEnded):
                request = streams.pop(event.stream_id)
                conn.sendall(h2c.data_to_send())
                respond_http2(conn, h2c, event.stream_id, request, cases)
        conn.sendall(h2c.data_to_send())
        data = b""


def respond_http2(conn: socket.socket, h2c: h2.connection.H2Connection, sid: int, request: dict, cases: dict) -> None:
    case = cases.get(request["path"].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1])
    if case is None:
        h2c.send_headers(sid, [(":status", "404")], end_stream=True)
        conn.sendall(h2c.data_to_send())
        return
    body = case_body(case, request["body"], request["trailers"])
    trailers = case.get("trailers") or []
    cut = case.get("cut")
    headers = [(":status", str(case.get("status", 200))), ("content-type", case["content_type"])]
    if case.get("framing", "length") == "length":
        headers.append(("content-length", str(len(body))))
    h2c.send_headers(sid, headers)
    sent = body if cut is None else body[:cut]
    step = min(case.get("chunk", 4096), 16384)
    for i in range(0, len(sent), step):
        while h2c.local_flow_control_window(sid) < step:
            conn.sendall(h2c.data_to_send())
            more = conn.recv(65536)
            if not more:
                return
            for event in h2c.receive_data(more):
                pass
        last = i + step >= len(sent) and cut is None and not trailers
        h2c.send_data(sid, sent[i : i + step], end_stream=last)
        conn.sendall(h2c.data_to_send())
    pause(case)
    if cut is not None:
        h2c.reset_stream(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
    elif trailers:
        h2c.send_headers(sid, trailers, end_stream=True)
    elif not sent:
        h2c.end_stream(sid)
    conn.sendall(h2c.data_to_send())


def handle(conn: socket.socket, cases: dict) -> None:
    with conn:
        buf = b""
        while len(buf) < len(PREFACE) and PREFACE.startswith(buf):
            more = conn.recv(65536)
            if not more:
                return
            buf += more
        try:
            if buf.startswith(PREFACE):
                serve_http2(conn, buf, cases)
            else:
                serve_http1(conn, buf, cases)
        except (OSError, h2.exceptions.ProtocolError):
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
