"""The mcp-toon WebAssembly component, run in a real component host.

The host is Wasmtime (PyPI `wasmtime`: the component model and WASI 0.2).
Every case goes to the `wasm32-wasip2` component through its WIT interface
(`wit/mcp-toon.wit`) and, in one batch, to `component-native` (the same
functions compiled natively, `crates/component/examples/component-native.rs`); the answers
must be equal, byte for byte. A few assertions on the answers themselves
check the cases exercise what they claim to.

Run through `tests/component/run.sh`, which builds both and sets
MCP_TOON_COMPONENT and MCP_TOON_NATIVE.
"""

import json
import os
import pathlib
import subprocess

import pytest
from wasmtime import Engine, Store, WasiConfig
from wasmtime import component as wc

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAYLOADS = ROOT / "tests" / "fixtures" / "payloads"
INTERFACE = "mcp-toon:plugin/core@0.1.0"

# (configuration, accepted by the plugin?)
CONFIG_CASES = [
    ("", True),
    ('{"toon":{"header":"fence","min_savings_pct":10}}', True),
    ('{"toon":{"mode":"always","header":"none"}}', True),
    ('{"max_body_bytes":1024,"max_response_bytes":1024}', True),
    ('{"toon":{"mode":"off"}}', True),
    # Trim on: the component has no HTTP client, so its callout fails open.
    ('{"trim":{"enabled":true,"cluster":"llm","threshold_bytes":100}}', True),
    # A budget without paging: results over it are cut, the rest not kept
    # (deterministic, so the component and the native core agree).
    ('{"budget":{"tokens":300}}', True),
    ('{"budget":{"tokens":300,"bytes":4096}}', False),
    ('{"hold_headers":false,"paging":{"enabled":true}}', False),
    # Operator rules and agent queries (the project stage).
    ('{"project":{"queries":true,"drop":["[].tags","**.price"]}}', True),
    ('{"project":{"drop":["a..b"]}}', False),
    ('{"project":{"query_argument":"no spaces"}}', False),
    ('{"toon":{"mode":"sometimes"}}', False),
    ('{"toon":{"min_savings_pct":95}}', False),
    ('{"max_body_bytes":10}', False),
    ('{"servers":[{"match":{}}]}', False),
    ('{"unknown_field":true}', False),
    ("not json", False),
    # HTML → Markdown, like every lossy transform, is opt-in.
    ('{"clean":{"html_to_markdown":true}}', True),
]
CONFIGS = [c for c, _ in CONFIG_CASES]
USABLE = [i for i, (_, ok) in enumerate(CONFIG_CASES) if ok]


def call(id_json, tool="list_things", arguments=None):
    return json.dumps({"jsonrpc": "2.0", "id": json.loads(id_json), "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments or {}}}).encode()


def table_text(n):
    return json.dumps([{"id": i, "name": f"item {i}", "price": i * 1.25, "tags": "a,b"} for i in range(n)])


def response(id_json, text):
    return json.dumps({"jsonrpc": "2.0", "id": json.loads(id_json),
                       "result": {"content": [{"type": "text", "text": text}]}}).encode()


def exchanges():
    """(name, config index, request, content type, response) for every case."""
    out = []
    bodies = []
    for path in sorted(PAYLOADS.iterdir()):
        raw = path.read_bytes()
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        if isinstance(doc, dict) and "id" in doc:
            bodies.append((path.name, call(json.dumps(doc["id"])), raw))
        elif isinstance(doc, dict) and "content" in doc:
            bodies.append((path.name, call("1"), b'{"jsonrpc":"2.0","id":1,"result":' + raw + b"}"))
    batch_request = b"[" + call("1", "a") + b"," + call('"two"', "b") + b"]"
    batch_response = b"[" + response("1", table_text(40)) + b"," + response('"two"', "short") + b"]"
    bodies += [
        ("table-40", call("7"), response("7", table_text(40))),
        ("table-3", call("7"), response("7", table_text(3))),
        ("big-numbers", call("7"), response("7", json.dumps(
            [{"id": 2**64 + i, "v": "x" * 40} for i in range(30)]))),
        ("unicode", call("7"), response("7", json.dumps(
            [{"id": i, "name": "naïve café 😀 " * 3} for i in range(30)], ensure_ascii=False))),
        ("batch", batch_request, batch_response),
        ("is-error", call("7"), json.dumps({"jsonrpc": "2.0", "id": 7, "result": {
            "content": [{"type": "text", "text": table_text(40)}], "isError": True}}).encode()),
        ("invalid-utf8", call("7"), b'{"jsonrpc":"2.0","id":7,"result":{"content":[]}}\xff'),
        ("id-mismatch", call("8"), response("7", table_text(40))),
        ("with-intent", call("7", arguments={"expected_info": "ids and names only"}),
         response("7", table_text(40))),
        ("with-query", call("7", arguments={"jmespath": "[?price > `10`].{id: id, name: name}"}),
         response("7", table_text(40))),
        ("with-bad-query", call("7", arguments={"jmespath": "[?price >"}), response("7", table_text(40))),
        ("html-page", call("7"), response("7", (PAYLOADS / "page.html").read_text())),
        ("prose", call("7"), response("7", (PAYLOADS / "prose.txt").read_text())),
        ("pretty-object", call("7"), response("7", json.dumps(
            {"service": "checkout", "owners": ["a", "b"], "limits": {"cpu": "500m", "memory": None}},
            indent=2))),
    ]
    for config in USABLE:
        for name, request, body in bodies:
            out.append((f"{name}@config{config}", config, request, "application/json", body))
    table = response("7", table_text(40))
    out += [
        ("tools-list-request", 0, b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}', "application/json", table),
        ("not-json-request", 0, b"hello", "application/json", table),
        ("empty-request", 0, b"", "application/json", table),
        ("text-plain-response", 0, call("7"), "text/plain", table),
        ("charset-parameter", 0, call("7"), "Application/JSON; charset=utf-8", table),
        ("event-stream", 0, call("9"), "text/event-stream", (PAYLOADS / "stream.sse").read_bytes()),
        ("empty-response", 0, call("7"), "application/json", b""),
    ]
    return out


EXCHANGES = exchanges()
ENCODE = [
    table_text(5),
    json.dumps({"items": json.loads(table_text(4)), "next": None, "total": 4}),
    '{"z":1,"a":{"nested":[1,2,3]},"s":"with, comma: and \\"quotes\\""}',
    '[18446744073709551615, -9223372036854775808, 0.1, 1e-7, 1.5e300]',
    '"just a string"',
    "[]",
    "{}",
    '{"a":1,"a":2}',
    "[1e400]",
    '[{"a":1,"b":2},{"b":3,"a":4}]',
    "{",
    "",
]


# (json, expression, max_query_bytes) for `project-query`.
PROJECT = [
    (table_text(10), "[?price > `5`].name", 1024),
    (table_text(10), "[0].{n: name, i: id}", 1024),
    ('{"big": 123456789012345678901234567890, "e": 1.50e3, "s": "caf\u00e9"}', "[big, e, s]", 1024),
    (table_text(10), "[?", 1024),
    (table_text(10), "[?name == 'nobody']", 1024),
    (table_text(10), "length(@[0].id)", 1024),
    (table_text(10), "[@,@] | [@,@] | [@,@] | [@,@]", 1024),
    (table_text(10), "[*].name", 8),
    ("not json", "a", 1024),
    # At the parser's recursion limits (48 brackets, 16 prefix operators):
    # answered, not a trap, in Wasmtime's default wasm stack.
    ('{"a": [{"a": [1]}]}', "a[*]." * 47 + "a", 1024),
    ('{"a": [{"a": [1]}]}', "a[*]." * 48 + "a", 1024),
    ('{"a": true}', "!" * 16 + "a", 1024),
    ('{"a": true}', "[" * 16 + "a" + "]" * 16, 1024),
]


def decode_cases():
    """Hand-written TOON, and the native encodings of ENCODE bare, after a
    marker line, and fenced."""
    cases = ["[2]{a}:\n  1\n  2", "items[3]: a,b", "key: value\n", "a:\n  b: [unclosed"]
    native = run_native_once({"configs": [], "exchanges": [], "encode": ENCODE, "decode": []})
    for answer in native["encode"]:
        toon = answer.get("ok")
        if toon is not None:
            cases += [toon, "[mcp-toon/v1] marker line\n" + toon,
                      "[mcp-toon/v1] fenced\n```toon\n" + toon + "\n```\n"]
    return cases


def run_native_once(cases):
    exe = os.environ.get("MCP_TOON_NATIVE")
    if not exe:
        pytest.skip("MCP_TOON_NATIVE not set: run tests/component/run.sh")
    done = subprocess.run([exe], input=json.dumps(cases).encode(), capture_output=True, check=True)
    return json.loads(done.stdout)


class Host:
    """The component, instantiated once, with its exports looked up by name."""

    def __init__(self, path):
        self.engine = Engine()
        self.store = Store(self.engine)
        self.store.set_wasi(WasiConfig())
        linker = wc.Linker(self.engine)
        linker.add_wasip2()
        component = wc.Component.from_file(self.engine, path)
        self.instance = linker.instantiate(self.store, component)
        self.iface = self.instance.get_export_index(self.store, INTERFACE)
        assert self.iface is not None, f"component does not export {INTERFACE}"

    def call(self, name, *args):
        index = self.instance.get_export_index(self.store, name, self.iface)
        assert index is not None, f"{INTERFACE} has no export {name}"
        func = self.instance.get_func(self.store, index)
        out = func(self.store, *args)
        func.post_return(self.store)
        return out

    def result(self, name, *args):
        """A `result<string, string>` as {"ok": ...} or {"err": ...}."""
        out = self.call(name, *args)
        return {out.tag: out.payload}

    def create(self, config):
        """`processor.create`: a resource handle, or the error text."""
        return self.call("[static]processor.create", config)

    def process(self, processor, request, content_type, body):
        out = self.call("[method]processor.process-response", processor, request, content_type, body)
        return {"body": list(out.body), "changed": out.changed, "report": out.report,
                "summary": out.summary}


@pytest.fixture(scope="module")
def host():
    path = os.environ.get("MCP_TOON_COMPONENT")
    if not path:
        pytest.skip("MCP_TOON_COMPONENT not set: run tests/component/run.sh")
    return Host(path)


@pytest.fixture(scope="module")
def cases():
    return {
        "configs": CONFIGS,
        "exchanges": [{"config": c, "request": list(req), "content_type": ct, "response": list(body)}
                      for _, c, req, ct, body in EXCHANGES],
        "encode": ENCODE,
        "decode": decode_cases(),
        "project": PROJECT,
    }


@pytest.fixture(scope="module")
def native(cases):
    return run_native_once(cases)


@pytest.fixture(scope="module")
def processors(host):
    handles = {}
    for i, config in enumerate(CONFIGS):
        handles[i] = host.create(config)
    yield handles
    for handle in handles.values():
        if not isinstance(handle, str):
            handle.drop(host.store)


def test_configurations_accepted_and_refused_alike(host, processors, native):
    for i, config in enumerate(CONFIGS):
        handle = processors[i]
        got = {"err": handle} if isinstance(handle, str) else {"ok": None}
        assert got == native["configs"][i], config
        if i in USABLE:
            assert "ok" in got, config
        else:
            assert got["err"].startswith("mcp-toon configuration: "), got


def test_process_response_equals_native(host, processors, native):
    assert len(native["exchanges"]) == len(EXCHANGES)
    for (name, config, request, content_type, body), want in zip(EXCHANGES, native["exchanges"]):
        got = host.process(processors[config], request, content_type, body)
        assert got == want, name
        if not got["changed"]:
            assert bytes(got["body"]) == body, f"{name}: unchanged body must be the input"


def test_process_response_cases_do_what_they_say(host, processors):
    by_name = {name: (c, r, ct, b) for name, c, r, ct, b in EXCHANGES}

    def run(name):
        c, r, ct, b = by_name[name]
        out = host.process(processors[c], r, ct, b)
        return out, json.loads(out["report"])["decisions"]

    out, decisions = run("table-40@config0")
    # `", "` separators (Python's json.dumps): compact JSON first (lossless,
    # taken whenever smaller), then TOON.
    assert out["changed"] and out["summary"].startswith("cleaned=1 encoded=1")
    text = json.loads(bytes(out["body"]))["result"]["content"][0]["text"]
    assert text.startswith("[mcp-toon/v1] ")
    assert [(d["outcome"], d.get("transform")) for d in decisions] == [("cleaned", "compact_json"), ("encoded", None)]
    out, _ = run("table-40@config4")
    # TOON off: the lossless compaction still applies, to the same value.
    assert out["changed"] and "mode_off" in out["summary"]
    text = json.loads(bytes(out["body"]))["result"]["content"][0]["text"]
    assert text == json.dumps(json.loads(text), separators=(",", ":")) and json.loads(text) == json.loads(table_text(40))
    out, _ = run("table-40@config3")
    assert not out["changed"] and "response_too_large" in out["summary"]
    for name, reason in [("error.json@config0", "jsonrpc_error"), ("is-error@config0", "is_error"),
                         ("invalid-utf8@config0", "invalid_utf8"), ("tools-list-request", "not_tools_call"),
                         ("text-plain-response", "not_json_response")]:
        out, decisions = run(name)
        assert not out["changed"], name
        assert reason in [d.get("reason") for d in decisions], (name, decisions)
    # Below toon.min_bytes: not encoded, but compacted (lossless, any size).
    out, decisions = run("table-3@config0")
    assert out["changed"] and [(d["stage"], d.get("reason")) for d in decisions] == [
        ("clean", None), ("toon", "below_min_bytes")], decisions
    # Pretty JSON that is no table: compacted by the clean stage, not encoded.
    out, decisions = run("nested.json@config0")
    assert out["changed"] and [(d["stage"], d.get("reason")) for d in decisions] == [
        ("clean", None), ("toon", "not_tabular")], decisions
    out, decisions = run("batch@config0")
    assert out["changed"] and [d["outcome"] for d in decisions] == ["cleaned", "encoded", "passthrough"]
    out, _ = run("charset-parameter")
    assert out["changed"]
    # HTML → Markdown is opt-in: the default leaves the page as it is.
    out, decisions = run("html-page@config0")
    assert not out["changed"] and bytes(out["body"]) == by_name["html-page@config0"][3], decisions
    html = CONFIGS.index('{"clean":{"html_to_markdown":true}}')
    out, decisions = run(f"html-page@config{html}")
    assert out["changed"] and [d["stage"] for d in decisions][:1] == ["clean"], decisions
    assert "<p>" not in json.loads(bytes(out["body"]))["result"]["content"][0]["text"]
    out, decisions = run("prose@config0")
    assert not out["changed"], decisions
    out, _ = run("event-stream")
    assert out["changed"] and bytes(out["body"]).startswith(b"event: message\r\ndata: ")
    trim = CONFIGS.index('{"trim":{"enabled":true,"cluster":"llm","threshold_bytes":100}}')
    out, decisions = run(f"with-intent@config{trim}")
    assert out["changed"], decisions
    assert [d["stage"] for d in decisions] == ["clean", "trim", "toon"], decisions
    assert decisions[1]["outcome"] == "passthrough" and decisions[2]["outcome"] == "encoded"
    # Operator rules run before the agent's query: `price` is dropped, so a
    # query on it selects nothing and the rules' result goes out with a note.
    project = CONFIGS.index('{"project":{"queries":true,"drop":["[].tags","**.price"]}}')
    out, decisions = run(f"with-query@config{project}")
    assert [(d["stage"], d["outcome"], d.get("reason")) for d in decisions][1:3] == [
        ("project", "projected", None), ("project", "passthrough", "query_empty")], decisions
    text = json.loads(bytes(out["body"]))["result"]["content"][0]["text"]
    assert text.endswith("; this is the full result]") and "price" not in text
    # Queries off (config 0): the argument is the server's business.
    out, decisions = run("with-query@config0")
    assert "project" not in [d["stage"] for d in decisions], decisions


def test_toon_encode_and_decode_equal_native(host, cases, native):
    for text, want in zip(cases["encode"], native["encode"]):
        assert host.result("toon-encode", text) == want, text
    for text, want in zip(cases["decode"], native["decode"]):
        assert host.result("toon-decode", text) == want, text


def test_toon_round_trip_in_the_component(host):
    for text in ENCODE[:7]:
        toon = host.result("toon-encode", text)["ok"]
        back = host.result("toon-decode", toon)["ok"]
        assert json.loads(back) == json.loads(text), text
    for text, needle in [('{"a":1,"a":2}', "same key twice"), ("[1e400]", "exactly"), ("{", "not one JSON")]:
        assert needle in host.result("toon-encode", text)["err"], text
    assert host.result("toon-decode", "items[3]: a,b")["err"].startswith("input is not valid TOON")


def test_a_result_over_its_budget_is_cut_alike(host, processors):
    budget = CONFIGS.index('{"budget":{"tokens":300}}')
    out = host.process(processors[budget], call("7"), "application/json", response("7", table_text(200)))
    decisions = json.loads(out["report"])["decisions"]
    assert out["changed"] and decisions[-1]["stage"] == "budget" and decisions[-1]["outcome"] == "cut", decisions
    content = json.loads(bytes(out["body"]))["result"]["content"]
    assert content[-1]["text"].startswith("[mcp-toon] Result cut to fit 300 tokens.")


def test_pages_kept_in_the_component_are_served_by_answer_request(host):
    processor = host.create('{"hold_headers":true,"budget":{"tokens":400},"paging":{"enabled":true}}')
    try:
        rows = json.loads(table_text(300))
        out = host.process(processor, call("7"), "application/json", response("7", table_text(300)))
        content = json.loads(bytes(out["body"]))["result"]["content"]
        got = json.loads(host.result("toon-decode", content[0]["text"])["ok"])
        notice = content[1]["text"]
        pages = 1
        while '{"handle":"' in notice:
            handle = notice.split('{"handle":"')[1].split('"')[0]
            page_call = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                    "params": {"name": "mcp_toon_page", "arguments": {"handle": handle}}}).encode()
            reply = host.call("[method]processor.answer-request", processor, page_call, "application/json")
            assert reply is not None and reply.status == 200
            assert getattr(reply, "content-type", getattr(reply, "content_type", None)) == "application/json"
            result = json.loads(bytes(reply.body))["result"]
            assert "isError" not in result, result
            got += json.loads(host.result("toon-decode", result["content"][0]["text"])["ok"])
            notice = result["content"][1]["text"]
            pages += 1
        assert pages > 2 and got == rows
        # Any other request goes to the server.
        assert host.call("[method]processor.answer-request", processor, call("7"), "application/json") is None
    finally:
        processor.drop(host.store)


def test_project_query_equals_native(host, native):
    for i, (text, expression, max_bytes) in enumerate(PROJECT):
        got = host.result("project-query", text, expression, max_bytes)
        assert got == native["project"][i], expression
    assert host.result("project-query", *PROJECT[0])["ok"] == json.dumps(
        [r["name"] for r in json.loads(PROJECT[0][0]) if r["price"] > 5], separators=(",", ":"))
    assert host.result("project-query", *PROJECT[3])["err"].startswith("query_invalid: ")
