#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz target (fuzz/seeds/<target>/) from the
same shapes the unit tests use: tabular and non-tabular tool results, SSE
streams with progress, batches, errors, listings, configs. Deterministic;
run it again after changing a target's input layout."""

import base64
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def rows(n, nested=False):
    out = []
    for i in range(n):
        r = {"id": i, "name": f"user-{i} é€", "active": i % 2 == 0, "score": 1.5 + i}
        if nested:
            r["geo"] = {"lat": i / 3, "lon": -i}
        out.append(r)
    return out


def result(id_, text, extra=None):
    res = {"content": [{"type": "text", "text": text}]}
    res.update(extra or {})
    return {"jsonrpc": "2.0", "id": id_, "result": res}


CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "rows", "arguments": {"q": 1, "expected_info": "ids"}}}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

BODIES = [
    json.dumps(result(1, json.dumps(rows(30)))),
    json.dumps(result(1, json.dumps({"total": 99, "items": rows(12, nested=True)}, indent=2))),
    json.dumps(result(1, "plain prose " * 40)),
    json.dumps(result(1, json.dumps(rows(10)), {"isError": True})),
    json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}}),
    json.dumps([result(1, json.dumps(rows(8))), {"jsonrpc": "2.0", "method": "notifications/progress"}]),
    json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
        {"name": "rows", "description": "Rows.", "inputSchema": {"type": "object", "properties": {}}}]}}),
    '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"[{\\"a\\":1,\\"a\\":2}]"}]}}',
]


def hostile(n=8192):
    """Small versions of the adversarial benchmark's shapes (issue 13):
    what made a stage superlinear, for the fuzzer to grow from."""
    def rep(unit, head=""):
        return head + unit * ((n - len(head)) // len(unit))
    return [
        rep("AAAAAAAAAAAAAAAA\n"),
        "\n".join(base64.b64encode(bytes((i * 7919) % 251 for i in range(6000))).decode()[k:k + 76] for k in range(0, 8000, 76)),
        rep("<rt>x", "<html><body><p>a</p>"),
        rep('<div title="<">', "<html><body>"),
        rep("<div>") + "x" + rep("</div>"),
        rep("<ul><li>", "<html><body>"),
        rep("<b><i><u><s><div><p>x</b></i></u></s>y", "<html><body>"),
        "<html><body><div" + "".join(f" a{i}" for i in range(n // 7)) + ">x</div>",
        rep("<html a>", "<html><body>x"),
        rep("<tr><td colspan=4000000000>c</td></tr>", "<table>"),
        rep("x<br>", "<ul><li><ul><li><ul><li><ul><li>"),
        rep("a \t \n\n\n  \t"),
        rep("```\nx   y\n"),
        '{"k\\n' + "x" * (n // 2) + '":' + "[" * 100 + '"a"' + "]" * 100 + "}",
        "{" + rep('"a": null, ') + '"z": 1}',
        "[" + rep('{"id":1,"g":{"a":1,"b":2}},{"id":2,"g":{"b":2,"a":1}},') + '{"id":0,"g":{"a":1,"b":2}}]',
    ]


def query_seeds():
    """(name, query, JSON result) for the `query` target: the attack of
    issue 37, the README's and the e2e suite's queries, and the inputs on
    which the jmespath crate's own interpreter panics."""
    users = json.dumps([{"id": i, "name": f'user "{i}" \\ x', "email": f"u{i}@example.com", "active": i % 2 == 0}
                        for i in range(60)], separators=(",", ":"))
    graph = json.dumps({"entities": [{"type": "entity", "name": f"E{i}", "entityType": ["person", "project", "company"][i % 3],
                                      "observations": [f"note {i}", f"born {1800 + i}"]} for i in range(12)],
                        "relations": [{"from": f"E{i}", "to": f"E{i + 1}", "relationType": "knows"} for i in range(11)]},
                       separators=(",", ":"))
    items = json.dumps({"items": [{"id": i, "title": f"t{i}", "state": ["open", "closed"][i % 2], "price": str(i * 1.5),
                                   "tags": ["urgent"] if i % 3 == 0 else [], "closed": i % 4 == 0, "created_at": f"2026-01-{i + 1:02}",
                                   "user": {"login": f"u{i}"}, "labels": [{"name": "bug"}], "comments": i}
                                  for i in range(20)]}, separators=(",", ":"))
    numbers = "[2,1e400,1,-1e400,0,1e400,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23]"
    return [
        ("doubling-24", "|".join(["to_array(@)|to_string(@)"] * 24), users),
        ("doubling-3", "|".join(["to_array(@)|to_string(@)"] * 3), users),
        ("multiselect", "[@,@] | [@,@] | [@,@] | [@,@] | [@,@] | [@,@] | [@,@] | [@,@]", users),
        ("flatten-wide", "[@,@,@,@,@,@,@,@][][] | [@,@,@,@,@,@,@,@][][]", users),
        ("to-string-dag", "length(to_string([@,@] | [@,@] | [@,@] | [@,@] | [@,@] | [@,@]))", users),
        ("equal-dag", "[@,@] | [@,@] | [@,@] | [@,@] | @ == [@,@] | [@,@] | [@,@] | [@,@]", users),
        ("sort-wide", "sort([@,@,@,@][][*].name)", users),
        ("sort-by", "sort_by(@, &name)[*].id", users),
        ("readme-filter", "items[?state=='open'].{id: id, title: title}", items),
        ("readme-names", "entities[*].name", graph),
        ("typical-sort-by", "sort_by(items, &created_at)[-5:].{id: id, title: title}", items),
        ("typical-max-by", "max_by(items, &to_number(price)).title", items),
        ("typical-contains", "items[?contains(tags, 'urgent') && !closed] | [0:10].id", items),
        ("typical-map", "map(&{n: name, t: entityType}, entities)", graph),
        ("typical-multi", "relations[*].[from, relationType, to]", graph),
        ("e2e-graph", "{people: length(entities[?entityType=='person']), companies: entities[?entityType=='company'].name}", graph),
        ("e2e-or", "entities[?name=='E1'].observations | [0] || `\"never-on-the-server\"`", graph),
        ("join", "join(', ', items[*].title)", items),
        ("slice-overflow", "[1::2147483647]", users),
        ("sort-infinities", "sort(@)[:3]", numbers),
        ("equal-infinities", "[n == n, [n] == [n]]", '{"n":1e400,"pad":"some text to be longer"}'),
    ]


def sse(body):
    progress = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}})
    return f": ping\r\n\r\nevent: message\r\ndata: {progress}\r\n\r\nid: 7\r\ndata: {body}\r\n\r\n"


def write(target, name, data):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    n = 0
    for i, body in enumerate(BODIES):
        for knobs in (0, 1, 2, 3, 4, 0x80, 0x83):
            req = json.dumps(LIST if "tools" in body and '"tools"' in body[:60] else CALL).encode()
            resp = (sse(body) if knobs & 0x80 else body).encode()
            data = bytes([knobs, i % 5, i % 5]) + struct.pack(">H", len(req)) + req + resp
            write("pipeline", f"seed-{i}-{knobs}", data)
            n += 1
    for i, text in enumerate([json.dumps(rows(20)), json.dumps({"items": rows(6, True), "next": None}),
                              json.dumps(rows(5), indent=2), "[1,2,3]", '"x"', "not json",
                              json.dumps([{"a": "```"}, {"a": "-1e5"}, {"a": " true"}, {"a": "#x"}])]):
        for knobs in (0, 1, 2, 0x80):
            write("toon_stage", f"seed-{i}-{knobs}", bytes([knobs]) + text.encode())
    for i, text in enumerate(hostile()):
        write("clean", f"hostile-{i}", text.encode())
        # Knobs 5: the pipeline target's configuration with every clean
        # transform on.
        req = json.dumps(CALL).encode()
        resp = json.dumps(result(1, text)).encode()
        write("pipeline", f"hostile-{i}", bytes([5, 4, 0]) + struct.pack(">H", len(req)) + req + resp)
    for i, text in enumerate(["plain prose " * 40, "<p>Hello <b>world</b></p><ul><li>a</li></ul>",
                              json.dumps({"a": "x    y", "b": None}, indent=2)]):
        write("clean", f"seed-{i}", text.encode())
    for name, query, text in query_seeds():
        write("query", name, query.encode() + b"\0" + text.encode())
    for i, cfg in enumerate(["{}", '{"toon":{"mode":"always","header":"fence"}}',
                             '{"servers":[{"match":{"cluster":"c"},"toon":{"min_savings_pct":30},'
                             '"tools":{"t":{"trim":{"enabled":true}}}}],"trim":{"client_id":"a","client_secret":"b"}}',
                             '{"toon":{"mode":"x"}}']):
        write("config", f"seed-{i}", cfg.encode())
    # Secrets in every shape, owners and the re-issue cluster (issue 37).
    for i, cfg in enumerate(['{"paging":{"key":[{"env":"HOME"},"0123456789abcdef0123456789abcdef"]}}',
                             '{"marker_key":{"env":"PATH"},"paging":{"owner":{"from":"header","name":"x-user"}}}',
                             '{"paging":{"key":"0123456789abcdef0123456789abcdef","reissue_cluster":"loop",'
                             '"owner":{"from":"metadata","path":["a","b"]}}}',
                             '{"paging":{"key":1234567890123}}']):
        write("config", f"secret-{i}", cfg.encode())
    # page_call: mode byte (bits 0-1: a body, a handle, Alice's handle with
    # bytes changed, credentials; bit 2: Alice's credentials; bits 3-7:
    # chunk size), then the bytes.
    page = json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": {"name": "mcp_toon_page", "arguments": {"handle": "AgE"}}})
    for i, (mode, data) in enumerate([(0, page), (4, page), (1, "AgEHBwcHBwcHBwcHBwcHBwcHAgAAAB4AAAD6DwAA"),
                                      (5, "not a handle"), (2, "\x05abcdefgh"), (6, "\x20zz"),
                                      (3, "Bearer alice"), (3, "Bearer mallory"), (0x1c, page)]):
        write("page_call", f"seed-{i}", bytes([mode]) + data.encode())
    # handle: handle texts (an unsealed version-2 handle, one with the
    # sealed flag and junk after), page-call bodies, marks.
    unsealed = bytes([2, 0]) + bytes([7]) * 16 + struct.pack("<III", 2, 30, 4090)
    for i, data in enumerate([base64.urlsafe_b64encode(unsealed).rstrip(b"="),
                              base64.urlsafe_b64encode(bytes([2, 1]) + unsealed[2:] + bytes(40)).rstrip(b"="),
                              page.encode(), b"1.1035.AAAAAAAAAAAAAAAAAAAAAA", b"/mcp\nlocalhost:8080"]):
        write("handle", f"seed-{i}", data)
    print(f"wrote {n} pipeline seeds and the toon_stage, clean, config, query, page_call and handle seeds")


if __name__ == "__main__":
    main()
