"""A client that reports exactly what arrived: the body bytes, the trailer
fields, and whether the message ended properly — over HTTP/1.1 (chunked
with trailers, or content-length) or HTTP/2 (prior knowledge). httpx hides
trailers and turns a cut-short body into an exception without its bytes;
the misbehaving-upstream tests compare these reports between the same Envoy
with and without the plugin.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events


@dataclass
class Reply:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    trailers: list[tuple[str, str]] = field(default_factory=list)
    # The message ended as HTTP says (last chunk / content-length reached /
    # END_STREAM), not by a reset or a closed connection.
    complete: bool = False


def post(
    port: int,
    path: str,
    body: bytes,
    headers: dict[str, str],
    http2: bool = False,
    trailers: list[tuple[str, str]] | None = None,
    timeout: float = 15.0,
) -> Reply:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        if http2:
            return _post_h2(conn, path, body, headers, trailers or [])
        return _post_h1(conn, path, body, headers, trailers or [])


def _post_h1(conn: socket.socket, path: str, body: bytes, headers: dict[str, str], trailers: list[tuple[str, str]]) -> Reply:
    lines = [f"POST {path} HTTP/1.1", "host: 127.0.0.1", "te: trailers", "connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if trailers:
        lines.append("transfer-encoding: chunked")
        wire = ("\r\n".join(lines) + "\r\n\r\n").encode()
        wire += b"%x\r\n%s\r\n" % (len(body), body) if body else b""
        wire += b"0\r\n" + "".join(f"{n}: {v}\r\n" for n, v in trailers).encode() + b"\r\n"
    else:
        lines.append(f"content-length: {len(body)}")
        wire = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
    conn.sendall(wire)
    data = b""
    try:
        while more := conn.recv(65536):
            data += more
    except (ConnectionResetError, TimeoutError):
        pass
    reply = Reply()
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        return reply
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    reply.status = int(status_line.split(" ")[1])
    for line in header_lines:
        name, _, value = line.partition(":")
        reply.headers[name.strip().lower()] = value.strip()
    if "chunked" in reply.headers.get("transfer-encoding", ""):
        while True:
            size_line, sep, rest = rest.partition(b"\r\n")
            if not sep:
                return reply
            size = int(size_line.split(b";")[0] or b"0", 16)
            if size == 0:
                for line in rest.split(b"\r\n"):
                    if not line:
                        reply.complete = rest.endswith(b"\r\n")
                        return reply
                    name, _, value = line.decode("latin-1").partition(":")
                    reply.trailers.append((name.strip().lower(), value.strip()))
                return reply
            reply.body += rest[:size]
            if len(rest) < size + 2:
                return reply
            rest = rest[size + 2 :]
    length = reply.headers.get("content-length")
    reply.body = rest
    reply.complete = length is not None and len(rest) == int(length)
    return reply


def _post_h2(conn: socket.socket, path: str, body: bytes, headers: dict[str, str], trailers: list[tuple[str, str]]) -> Reply:
    h2c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    h2c.initiate_connection()
    sid = h2c.get_next_available_stream_id()
    h2c.send_headers(sid, [(":method", "POST"), (":path", path), (":scheme", "http"), (":authority", "127.0.0.1"), *headers.items()])
    h2c.send_data(sid, body, end_stream=not trailers)
    if trailers:
        h2c.send_headers(sid, trailers, end_stream=True)
    conn.sendall(h2c.data_to_send())
    reply = Reply()
    while True:
        try:
            data = conn.recv(65536)
        except (ConnectionResetError, TimeoutError):
            return reply
        if not data:
            return reply
        for event in h2c.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                hs = dict(event.headers)
                reply.status = int(hs.pop(":status"))
                reply.headers = hs
            elif isinstance(event, h2.events.DataReceived):
                reply.body += event.data
                h2c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.TrailersReceived):
                reply.trailers = list(event.headers)
            elif isinstance(event, h2.events.StreamEnded):
                reply.complete = True
                return reply
            elif isinstance(event, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                return reply
        conn.sendall(h2c.data_to_send())
