"""Database MCP servers this project did not write, on real databases,
through the real Envoy with mcp-toon at its default configuration (`{}`),
called with the official TypeScript client (tests/e2e/databases.py: PyPI
`mcp-server-sqlite` on SQLite, npm `@modelcontextprotocol/server-postgres`
and `@bytebase/dbhub` on PostgreSQL, PyPI `mcp-server-motherduck` on DuckDB
loaded from CSV, PyPI `excel-mcp-server` on an .xlsx workbook; the data:
tests/e2e/db_fixtures.py).

Each server's plan (schema, a table's columns, selects of 5, 50 and 500
rows, an aggregate, a write and its undo where the server allows it, a
query with a typo, the whole 6,000-row table: about 1 MB) runs on two
listeners of one Envoy, without the plugin and with it. What must hold on
every call: nothing fails only through the plugin (the same JSON-RPC error,
the same `isError` result byte for byte), every text item the plugin
changed decodes to exactly the server's value (compact JSON, or TOON read
by the reference TypeScript decoder; the server's value read from its JSON
or from the Python literal mcp-server-sqlite writes), every other item and
`structuredContent` are untouched.

What the plugin saves on these calls is measured by
scripts/bench_databases.py (BENCHMARKS.md, "Database MCP servers").
"""

from __future__ import annotations

from pathlib import Path

import pytest

import databases
import db_fixtures
from databases import Exchange


LOSSY_TRANSFORMS = ("html_to_markdown", "strip_base64", "collapse_whitespace", "remove_nulls", "max_text_bytes")


@pytest.fixture(scope="module")
def run(work_dir: Path) -> databases.Run:
    absent = databases.missing()
    assert not absent, f"missing {', '.join(map(str, absent))}: run scripts/bootstrap.sh"
    return databases.exchanged(work_dir / "databases")


@pytest.fixture(scope="module")
def exchanges(run: databases.Run) -> list[Exchange]:
    return run.calls


def of(exchanges: list[Exchange], server: str) -> list[Exchange]:
    mine = [e for e in exchanges if e.server == server]
    assert mine, f"no calls for {server}"
    return mine


def texts(message: dict) -> list[str]:
    return [c["text"] for c in message.get("result", {}).get("content", []) if c.get("type") == "text"]


@pytest.mark.parametrize("server", databases.SERVERS)
def test_every_call_is_the_same_or_decodes_to_the_servers_value(exchanges, server):
    outcomes = []
    for e in of(exchanges, server):
        assert "body" in e.bare and "body" in e.via, (e.kind, e.bare, e.via)
        bare, via = e.messages()
        outcomes.append((e.kind, e.name, databases.compare(bare, via)))
        # The client read what crossed the wire.
        for record, message in ((e.bare, bare), (e.via, via)):
            if "result" in record:
                assert record["result"]["content"] == message["result"]["content"], (e.kind, e.name)
            else:
                assert "error" in record and "error" in message, (e.kind, record)
    assert all(items for _, _, items in outcomes), outcomes


@pytest.mark.parametrize("server", databases.SERVERS)
def test_the_plans_read_what_the_fixtures_hold(exchanges, server):
    """The calls did what they were written for, so the tier measures real
    answers: the selects have their rows, the typo is an error, the write
    the server refuses is refused, the whole table comes back."""
    mine = of(exchanges, server)
    by_kind: dict[str, list[Exchange]] = {}
    for e in mine:
        by_kind.setdefault(e.kind, []).append(e)
    assert set(by_kind) >= set(databases.KINDS) - {"undo"}, sorted(by_kind)
    for e in mine:
        bare, _ = e.messages()
        if e.kind == "error" or (server == "postgres" and e.kind == "write"):
            failed = "error" in bare or bare["result"].get("isError") or texts(bare)[0].startswith("Database error")
            assert failed, (e.kind, bare)
            detail = str(bare.get("error") or texts(bare))
            expected = "read-only transaction" if e.kind == "write" else ("custmers" if server == "excel" else "nme")
            assert expected in detail, detail
        else:
            assert "result" in bare and not bare["result"].get("isError"), (e.kind, e.name, bare)
    rows = lambda e: databases.row_count(server, databases.server_value(texts(e.messages()[0])[0]))  # noqa: E731
    for kind, n in (("select 5", 5), ("select 50", 50), ("select 500", 500)):
        assert [rows(e) for e in by_kind[kind]] == [n], (server, kind)
    assert sum(rows(e) for e in by_kind["select all"]) == db_fixtures.CUSTOMERS, server


def test_the_plugin_rewrote_the_pretty_json_servers(exchanges):
    """The listener with the plugin has it loaded: the servers that answer
    with indented JSON (server-postgres, dbhub, motherduck) get at least
    their small results rewritten."""
    for server in ("postgres", "dbhub", "motherduck"):
        changed = [e.kind for e in of(exchanges, server) if any(o != "identical" for o in databases.compare(*e.messages()) if o not in ("error", "isError"))]
        assert "select 5" in changed, (server, changed)


def test_no_lossy_transform_ran(run):
    """At `{}` the plugin only compacts and encodes: no lossy clean
    transform counted a change on any of the calls."""
    assert any(k.startswith("mcp_toon_") for k in run.metrics), sorted(run.metrics)[:20]
    ran = {k: v for k, v in run.metrics.items() if k.removeprefix("mcp_toon_clean_") in LOSSY_TRANSFORMS and v}
    assert not ran, ran
