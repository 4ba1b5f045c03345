"""Five database MCP servers this project did not write, on real databases,
for the database tier (tests/e2e/test_databases.py) and its benchmark
(scripts/bench_databases.py):

- PyPI `mcp-server-sqlite` on a SQLite file (its own environment,
  .venv-sqlite: it crashes at start with `mcp` 2.x);
- npm `@modelcontextprotocol/server-postgres` on PostgreSQL (Debian's
  `postgresql`: a cluster of our own, `initdb` into a temporary folder,
  `pg_ctl` on a free loopback port, run as the `postgres` user when we are
  root, stopped by its pid);
- npm `@bytebase/dbhub` on the same PostgreSQL;
- PyPI `mcp-server-motherduck` on DuckDB in memory, loaded from CSV files;
- PyPI `excel-mcp-server` on an .xlsx workbook.

Each is a stdio server bridged to Streamable HTTP by supergateway
(`peers.start_bridged`), on the data of `db_fixtures`. `exchange` makes
every call of each server's plan with the official TypeScript client
through one Envoy, on two listeners per server: one with mcp-toon at `{}`
and one without the wasm filter, and returns both answers of every call.
Every plan leaves its database as it found it (a row written is deleted
again, a sheet added is removed), so the second session sees what the first
saw.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import db_fixtures
import harness
import measure
import peers
from harness import MARKER, split_marker, toon_decode

SERVERS = ["sqlite", "postgres", "dbhub", "motherduck", "excel"]

SQLITE_BIN = harness.ROOT / ".venv-sqlite" / "bin"
SQLITE = [str(SQLITE_BIN / "mcp-server-sqlite")]
POSTGRES = [str(peers.NODE), str(peers.NODE_MODULES / "@modelcontextprotocol" / "server-postgres" / "dist" / "index.js")]
DBHUB = [str(peers.NODE), str(peers.NODE_MODULES / "@bytebase" / "dbhub" / "dist" / "index.js")]
MOTHERDUCK = [str(peers.SERVERS_BIN / "mcp-server-motherduck")]
EXCEL = [str(peers.SERVERS_BIN / "excel-mcp-server")]
SERVERS_PYTHON = peers.SERVERS_BIN / "python"
# Node's `pg` turns DATE and TIMESTAMP into JavaScript dates, which
# JSON.stringify writes in UTC from the process's local time zone: fixed
# here so every run reads the same instants.
SERVER_ENV = {"TZ": "UTC"}


def pg_bin() -> Path | None:
    """The folder of Debian's PostgreSQL programs (initdb, pg_ctl, psql are
    not on PATH there), the newest major version first; else PATH's."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def missing() -> list[Path | str]:
    """What scripts/bootstrap.sh has not installed yet."""
    out: list[Path | str] = [p for p in peers.missing()]
    out += [Path(p) for p in (SQLITE[0], POSTGRES[1], DBHUB[1], MOTHERDUCK[0], EXCEL[0], SERVERS_PYTHON) if not Path(p).exists()]
    if pg_bin() is None:
        out.append("PostgreSQL (Debian package postgresql: initdb)")
    return out


# --- PostgreSQL ------------------------------------------------------------------------------


@dataclass
class Postgres:
    """A cluster of our own on 127.0.0.1:`port` (no Unix socket), with one
    user `mcp` whose password is drawn for the run."""

    folder: Path
    port: int
    password: str
    pid: int

    def url(self, database: str = "shop") -> str:
        return f"postgresql://mcp:{self.password}@127.0.0.1:{self.port}/{database}"

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (SIGINT to the postmaster, by its pid), then the
        folder goes."""
        # The postmaster is pg_ctl's daemon, not our child: it is gone when
        # signal 0 finds no such process.
        for sig in (signal.SIGINT, signal.SIGQUIT):  # fast, then immediate
            try:
                os.kill(self.pid, sig)
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    os.kill(self.pid, 0)
                    time.sleep(0.05)
            except ProcessLookupError:
                break
        shutil.rmtree(self.folder, ignore_errors=True)


def _as_cluster_owner(argv: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root: as root, run it as Debian's
    # `postgres` user (created by the package).
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def start_postgres(sql: str, log_dir: Path) -> Postgres:
    """initdb, pg_ctl start on a free port, then `sql` loaded into a new
    database `shop` by psql."""
    bin_dir = pg_bin()
    if bin_dir is None:
        raise FileNotFoundError("initdb not found: run scripts/bootstrap.sh (Debian package postgresql)")
    # Not under pytest's temporary folder: the postgres user cannot enter
    # root's (mode 0700).
    folder = Path(tempfile.mkdtemp(prefix="mcp-toon-pg-"))
    password = secrets.token_hex(16)
    (folder / "pw").write_text(password + "\n")
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        shutil.chown(folder / "pw", "postgres")
    data, port = folder / "data", harness.free_port()
    log_dir.mkdir(parents=True, exist_ok=True)

    def run(argv: list[str], name: str, env: dict[str, str] | None = None) -> None:
        # In the cluster's folder: the postgres user may not enter ours
        # (a clone under /root, mode 0700), and initdb warns there.
        with open(log_dir / f"postgres-{name}.log", "wb") as log:
            r = subprocess.run(argv, cwd=folder, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=120, env={**os.environ, **(env or {})})
        if r.returncode != 0:
            raise RuntimeError(f"{name} failed ({r.returncode}):\n{(log_dir / f'postgres-{name}.log').read_text()[-3000:]}")

    pid = 0
    try:
        run(_as_cluster_owner([str(bin_dir / "initdb"), "-D", str(data), "-U", "mcp", "--auth=scram-sha-256", f"--pwfile={folder / 'pw'}", "-E", "UTF8", "--locale=C.UTF-8"]), "initdb")
        options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories='' -c fsync=off -c full_page_writes=off"
        run(_as_cluster_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-o", options, "-w", "-t", "60", "start"]), "pg_ctl")
        pid = int((data / "postmaster.pid").read_text().split("\n", 1)[0])
        pg = Postgres(folder, port, password, pid)
        script = folder / "shop.sql"
        script.write_text(sql)
        psql = [str(bin_dir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(port), "-U", "mcp"]
        env = {"PGPASSWORD": password}
        run([*psql, "-d", "postgres", "-c", "CREATE DATABASE shop"], "createdb", env)
        run([*psql, "-d", "shop", "-f", str(script)], "load", env)
        return pg
    except Exception:
        if pid:
            Postgres(folder, port, password, pid).stop()
        else:
            shutil.rmtree(folder, ignore_errors=True)
        raise


# --- the call plans ----------------------------------------------------------------------------

# What an agent asks a shop database, in each dialect the servers take.
SELECT_5 = "SELECT * FROM customers ORDER BY id LIMIT 5"
ORDERS_500 = "SELECT * FROM orders ORDER BY id LIMIT 500"
JOINED = (
    "SELECT o.id, o.ordered_at, o.status, o.total, o.currency, o.paid, c.name, c.city "
    "FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id LIMIT {n}"
)
AGGREGATE = (
    "SELECT c.country, o.currency, count(*) AS orders, sum(o.total) AS revenue, avg(o.items) AS avg_items "
    "FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.paid GROUP BY c.country, o.currency ORDER BY c.country"
)
INSERT = (
    "INSERT INTO orders (id, customer_id, ordered_at, status, total, currency, paid, shipped_at, items) "
    "VALUES (999001, 42, '2025-11-30 12:00:00', 'pending', 19.99, 'EUR', false, NULL, 1)"
)
DELETE = "DELETE FROM orders WHERE id = 999001"
BAD_SQL = "SELECT nme, email FROM customers WHERE country = 'IS'"  # a typo
ALL_CUSTOMERS = "SELECT * FROM customers ORDER BY id"

# The kinds of call every plan has (excel's "aggregate" is formulas the
# server computes; postgres has no "undo": the server refuses the write).
KINDS = ["tables", "describe", "select 5", "select 50", "select 500", "aggregate", "write", "undo", "error", "select all"]


def _call(kind: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"kind": kind, "name": name, "arguments": arguments}


def sqlite_calls() -> list[dict[str, Any]]:
    q = lambda kind, sql: _call(kind, "read_query", query=sql)  # noqa: E731
    return [
        _call("tables", "list_tables"),
        _call("describe", "describe_table", table_name="customers"),
        q("select 5", SELECT_5),
        q("select 50", JOINED.format(n=50)),
        q("select 500", ORDERS_500),
        q("aggregate", AGGREGATE),
        _call("write", "write_query", query=INSERT),
        _call("undo", "write_query", query=DELETE),
        q("error", BAD_SQL),
        q("select all", ALL_CUSTOMERS),
    ]


def postgres_calls() -> list[dict[str, Any]]:
    q = lambda kind, sql: _call(kind, "query", sql=sql)  # noqa: E731
    return [
        q("tables", "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name"),
        q("describe", "SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_name = 'customers' ORDER BY ordinal_position"),
        q("select 5", SELECT_5),
        q("select 50", JOINED.format(n=50)),
        q("select 500", ORDERS_500),
        q("aggregate", AGGREGATE),
        # The server runs every query in a read-only transaction: refused.
        q("write", INSERT),
        q("error", BAD_SQL),
        q("select all", ALL_CUSTOMERS),
    ]


def dbhub_calls() -> list[dict[str, Any]]:
    q = lambda kind, sql: _call(kind, "execute_sql", sql=sql)  # noqa: E731
    return [
        _call("tables", "search_objects", object_type="table"),
        _call("describe", "search_objects", object_type="column", schema="public", table="customers", detail_level="full"),
        q("select 5", SELECT_5),
        q("select 50", JOINED.format(n=50)),
        q("select 500", ORDERS_500),
        q("aggregate", AGGREGATE),
        q("write", INSERT),
        q("undo", DELETE),
        q("error", BAD_SQL),
        q("select all", ALL_CUSTOMERS),
    ]


def motherduck_calls() -> list[dict[str, Any]]:
    q = lambda kind, sql: _call(kind, "execute_query", sql=sql)  # noqa: E731
    return [
        _call("tables", "list_tables"),
        _call("describe", "list_columns", table="customers"),
        q("select 5", SELECT_5),
        q("select 50", JOINED.format(n=50)),
        q("select 500", ORDERS_500),
        q("aggregate", AGGREGATE),
        q("write", INSERT),
        q("undo", DELETE),
        q("error", BAD_SQL),
        q("select all", ALL_CUSTOMERS),
    ]


EXCEL_PAGE_CELLS = 10_000


def excel_calls(book: str) -> list[dict[str, Any]]:
    # read_range answers 2,000 cells a page unless asked for more: an agent
    # that wants 500 rows, or the whole sheet, asks for that many cells.
    r = lambda kind, sheet, rng, **more: _call(kind, "read_range", path=book, sheet=sheet, range=rng, **more)  # noqa: E731
    last, last_row = db_fixtures.ORDERS + 1, db_fixtures.CUSTOMERS + 1
    col = lambda c: f"orders!${c}$2:${c}${last}"  # noqa: E731
    statuses = [[s, f"=COUNTIF({col('D')},A{i + 2})", f"=SUMIF({col('D')},A{i + 2},{col('E')})"] for i, s in enumerate(db_fixtures.STATUSES)]
    return [
        _call("tables", "describe_workbook", path=book),
        _call("describe", "describe_sheet", path=book, sheet="customers"),
        r("select 5", "customers", "A1:J6"),
        r("select 50", "orders", "A1:I51"),
        r("select 500", "orders", "A1:I501", max_cells=9 * 501),
        # Aggregates in a workbook are formulas: a sheet for them, written,
        # computed by the server and read, then removed again.
        _call("write", "create_sheet", path=book, new_name="summary"),
        _call("write", "write_range", path=book, sheet="summary", at="A1", rows=[["status", "orders", "revenue"], *statuses]),
        r("aggregate", "summary", f"A1:C{len(statuses) + 1}"),
        _call("undo", "delete_sheet", path=book, sheet="summary"),
        r("error", "custmers", "A1:J6"),  # a typo
        # The whole sheet: the server answers at most 10,000 cells a call
        # (a limit of its own, no option raises it) and names the rest in
        # `next_range`, which the agent asks for next: seven pages.
        *(r("select all", "customers", f"A{first}:J{last_row}", max_cells=EXCEL_PAGE_CELLS) for first in range(1, last_row + 1, EXCEL_PAGE_CELLS // 10)),
    ]


def row_count(server: str, value: Any) -> int:
    """The rows in a select's answer (`server_value` of its text)."""
    if server == "dbhub":
        return len(value["data"]["statements"][0]["rows"])
    if server == "motherduck":
        return len(value["rows"])
    if server == "excel":  # the header row comes with a range from row 1
        values = value["values"]
        return len(values) - (1 if values and values[0][:1] == ["id"] else 0)
    return len(value)


# --- the servers --------------------------------------------------------------------------------


@dataclass
class Databases:
    """The five servers on their databases (each a supergateway bridge)."""

    work: Path
    postgres: Postgres
    bridged: dict[str, peers.Bridged] = field(default_factory=dict)

    def plans(self) -> dict[str, list[dict[str, Any]]]:
        return {
            "sqlite": sqlite_calls(),
            "postgres": postgres_calls(),
            "dbhub": dbhub_calls(),
            "motherduck": motherduck_calls(),
            "excel": excel_calls("shop.xlsx"),
        }

    def stop(self) -> None:
        for b in self.bridged.values():
            b.stop()
        self.postgres.stop()


def start(work: Path) -> Databases:
    """The fixtures written into `work`, PostgreSQL started, the five
    servers bridged."""
    work.mkdir(parents=True, exist_ok=True)
    tables = db_fixtures.make()
    db_fixtures.write_sqlite(tables, work / "shop.sqlite")
    csv = db_fixtures.write_csv(tables, work / "csv")
    books = work / "books"
    books.mkdir(exist_ok=True)
    db_fixtures.write_xlsx(tables, books / "shop.xlsx", SERVERS_PYTHON)
    # DuckDB loads the CSV files into tables at start (each session is a new
    # server process with its own in-memory database), so writes work.
    init = work / "duckdb-init.sql"
    init.write_text("".join(f"CREATE TABLE {t} AS SELECT * FROM read_csv('{p}');\n" for t, p in csv.items()))
    pg = start_postgres(db_fixtures.postgres_sql(tables), work / "logs")
    dbs = Databases(work, pg)
    try:
        env = SERVER_ENV
        dbs.bridged["sqlite"] = peers.start_bridged("sqlite", [*SQLITE, "--db-path", str(work / "shop.sqlite")], work, env=env)
        dbs.bridged["postgres"] = peers.start_bridged("postgres", [*POSTGRES, pg.url()], work, env=env)
        dbs.bridged["dbhub"] = peers.start_bridged("dbhub", [*DBHUB, "--transport", "stdio", "--dsn", pg.url() + "?sslmode=disable"], work, env=env)
        # The server caps results at 1,024 rows and 50,000 characters by
        # default; an operator who lets agents read whole tables raises both.
        dbs.bridged["motherduck"] = peers.start_bridged(
            "motherduck",
            [*MOTHERDUCK, "--db-path", ":memory:", "--read-write", "--home-dir", str(work), "--init-sql", str(init), "--max-rows", "100000", "--max-chars", "100000000"],
            work,
            env=env,
        )
        dbs.bridged["excel"] = peers.start_bridged("excel", [*EXCEL, "stdio", "--allow-dir", str(books)], work, env=env)
    except Exception:
        dbs.stop()
        raise
    return dbs


# --- every call, with and without the plugin ----------------------------------------------------


@dataclass
class Exchange:
    """One call of a plan, made through Envoy with mcp-toon at `{}` (`via`)
    and without the wasm filter (`bare`): the client's record of each
    (`result` or `error`, `contentType`, `body` as it crossed the wire)."""

    server: str
    kind: str
    name: str
    arguments: dict[str, Any]
    bare: dict[str, Any]
    via: dict[str, Any]

    def messages(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The JSON-RPC responses as they crossed the wire: (bare, via)."""
        return tuple(peers.wire_message(c.get("contentType"), c["body"]) for c in (self.bare, self.via))  # type: ignore[return-value]


@dataclass
class Run:
    """Every call of every plan, and Envoy's metrics after them (the
    plugin's counters from `/stats/prometheus`, labels stripped)."""

    calls: list[Exchange]
    metrics: dict[str, float]


def exchange(work: Path, servers: list[str] = SERVERS) -> Run:
    """Starts everything, runs each server's plan in one session of the
    official TypeScript client on each listener (first without the plugin,
    then with it), stops everything, and returns every call."""
    absent = missing()
    if absent:
        raise FileNotFoundError(f"missing {', '.join(map(str, absent))}: run scripts/bootstrap.sh")
    dbs = start(work)
    out: list[Exchange] = []
    try:
        listeners: dict[str, tuple[int, dict[str, Any] | None]] = {}
        for name in servers:
            listeners[name] = (dbs.bridged[name].port, {})
            listeners[f"{name}_bare"] = (dbs.bridged[name].port, None)
        envoy = peers.start_envoy_for(listeners, work, "envoy-databases")
        try:
            plans = dbs.plans()
            for name in servers:
                calls = plans[name]
                bare = peers.ts_calls(envoy.url(f"{name}_bare"), calls, timeout=300)
                via = peers.ts_calls(envoy.url(name), calls, timeout=300)
                for call, b, v in zip(calls, bare["calls"], via["calls"], strict=True):
                    out.append(Exchange(name, call["kind"], call["name"], call["arguments"], b, v))
            metrics = {k: v for k, v in envoy.prometheus().items() if k.startswith("mcp_toon_")}
        finally:
            envoy.stop()
    finally:
        dbs.stop()
    return Run(out, metrics)


@functools.cache
def exchanged(work: Path) -> Run:
    """`exchange` once per process: the tier's test files share one run."""
    return exchange(work)


# --- the rule ----------------------------------------------------------------------------------


def server_value(text: str) -> Any:
    """The value a server's text writes: JSON, or the `repr` of Python data
    (mcp-server-sqlite answers with `str(rows)`: what `ast.literal_eval`
    reads back). Raises ValueError when the text is neither."""
    try:
        return json.loads(text, parse_float=Decimal)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as err:
        raise ValueError(f"neither JSON nor a Python literal: {text[:200]!r}") from err


# The marker line's words for a block read from a Python literal
# (crates/core/src/marker.rs: MARKER_PREFIX, PYTHON_NOTE, TUPLES_NOTE).
MARKER_PREFIX = "[mcp-toon/v1]"
PYTHON_NOTE = "From a Python literal: same values; true/false/null were True/False/None."
TUPLES_NOTE = "Some arrays were tuples."


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def has_tuple(value: Any) -> bool:
    if isinstance(value, tuple):
        return True
    if isinstance(value, list):
        return any(has_tuple(v) for v in value)
    if isinstance(value, dict):
        return any(has_tuple(v) for v in value.values())
    return False


def same_value(a: Any, b: Any, path: str = "$") -> None:
    """`a` and `b` are the same data: equal strings, booleans and nulls,
    numbers equal in value (TOON writes 2.0 as 2; JSON's 1.50 is 1.5),
    objects with the same keys in the same order, arrays (or Python tuples)
    of the same items."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"
    elif isinstance(a, (int, float, Decimal)) and isinstance(b, (int, float, Decimal)):
        assert Decimal(repr(a) if isinstance(a, float) else a) == Decimal(repr(b) if isinstance(b, float) else b), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)[:20]} != {list(b)[:20]}"
        for k in a:
            same_value(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            same_value(x, y, f"{path}[{i}]")
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"


def outcome(server: str, sent: str) -> str:
    """How the text the client got through the plugin (`sent`) relates to
    the server's (`server`); fails unless it is `identical`, or a rewrite
    that decodes to exactly the server's value: `toon` (the marker, then
    TOON the reference TypeScript decoder reads) or `json` (a JSON text)."""
    if sent == server:
        return "identical"
    try:
        value = server_value(server)
    except ValueError:
        raise AssertionError(f"a text that is no data changed:\n--- server\n{server[:2000]}\n--- sent\n{sent[:2000]}") from None
    # A Python literal (clean.python_literal, on by default) is said so in
    # the marker line (crates/core/src/marker.rs: python_note, python_line), with the
    # tuples sentence when it held one; a JSON text never is.
    note = ""
    if not is_json(server):
        note = PYTHON_NOTE + (" " + TUPLES_NOTE if has_tuple(value) else "")
    if sent.startswith(MARKER):
        same_value(toon_decode(split_marker(sent, MARKER + (" " + note if note else ""))), value)
        return "toon"
    if note:
        same_value(json.loads(split_marker(sent, f"{MARKER_PREFIX} JSON. {note}"), parse_float=Decimal), value)
        return "json"
    same_value(json.loads(sent, parse_float=Decimal), value)
    return "json"


def compare(bare: dict[str, Any], via: dict[str, Any]) -> list[str]:
    """One tools/call response without and with the plugin (the JSON-RPC
    messages as they crossed the wire): an error is the same error, an
    `isError` result the same bytes; otherwise everything but
    `result.content[].text` is equal (`structuredContent` included) and
    each text follows `outcome`. Returns the outcome of each text item."""
    if "result" not in bare:
        assert via == bare, f"error responses differ: {bare} vs {via}"
        return ["error"]
    assert "result" in via, f"an answer became an error through the plugin: {via}"
    b_result, v_result = bare["result"], via["result"]
    if b_result.get("isError"):
        assert v_result == b_result, f"an isError result changed: {b_result} vs {v_result}"
        return ["isError"]
    b_items, v_items = b_result.get("content", []), v_result.get("content", [])
    assert len(b_items) == len(v_items)
    outcomes = []
    for b_item, v_item in zip(b_items, v_items):
        if b_item.get("type") == "text":
            outcomes.append(outcome(b_item["text"], v_item["text"]))
            b_item, v_item = {**b_item, "text": ""}, {**v_item, "text": ""}
        assert v_item == b_item, f"a content item other than its text changed: {b_item} vs {v_item}"
    rest = lambda r: {k: v for k, v in r.items() if k != "content"}  # noqa: E731
    assert rest(v_result) == rest(b_result), "the result beside content changed (structuredContent, isError, _meta)"
    assert {k: v for k, v in via.items() if k != "result"} == {k: v for k, v in bare.items() if k != "result"}
    return outcomes


# --- tokens ------------------------------------------------------------------------------------

# Every stage off and the size gate at its ceiling: `mcp-toon measure` then
# counts each text as given, whatever its size (at the defaults a result
# over max_body_bytes or max_response_bytes passes uncounted).
COUNT_CONFIG = {"max_body_bytes": 256 * 1024 * 1024, "max_response_bytes": 256 * 1024 * 1024, "toon": {"mode": "off"}, "clean": {"compact_json": False}}


def cli() -> Path:
    """The project's measuring CLI (`make cli`), built if missing."""
    if not measure.CLI.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "mcp-toon-cli", "--bin", "mcp-toon"], cwd=harness.ROOT, check=True, timeout=3600)
    return measure.CLI


def count_tokens(groups: dict[str, list[str]], work: Path) -> dict[str, int]:
    """o200k_base tokens of each group of texts, from one run of
    `mcp-toon measure` (tiktoken-rs, which embeds the table)."""
    folder = work / f"tokens-{time.monotonic_ns()}"
    folder.mkdir(parents=True)
    config = folder / "count.json"
    config.write_text(json.dumps(COUNT_CONFIG))
    names = {}
    for i, (key, texts) in enumerate(groups.items()):
        path = folder / f"{i:05d}.json"
        path.write_text(json.dumps({"content": [{"type": "text", "text": t} for t in texts]}))
        names[str(path)] = key
    run = subprocess.run([str(cli()), "measure", "--config", str(config), "--format", "json", str(folder)], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"mcp-toon measure failed ({run.returncode}): {run.stderr[-2000:]}")
    counted = {names[p["payload"]]: p["totals"]["tokens_before"] for p in json.loads(run.stdout)["payloads"] if p["payload"] in names}
    shutil.rmtree(folder, ignore_errors=True)
    return counted


def lossless_forms(text: str) -> list[str]:
    """The text and, when it is data (`server_value`), the lossless
    rewrites of its value: compact JSON with UTF-8 (not `\\uXXXX`) and the
    plugin's marker and TOON of it (`mcp-toon encode`, TOON spec v4)."""
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = server_value(text)
        except ValueError:
            return [text]
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    r = subprocess.run([str(cli()), "encode"], input=compact, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"mcp-toon encode failed: {r.stderr[-2000:]}")
    return [text, compact, r.stdout.removesuffix("\n")]


@dataclass
class Measured:
    """One call's text items: bytes and tokens without the plugin, with it,
    and the fewest tokens a lossless rewrite of each item would take."""

    exchange: Exchange
    outcomes: list[str]
    text_bytes: tuple[int, int]
    tokens: tuple[int, int]
    best: int


def texts_of(message: dict[str, Any]) -> list[str]:
    return [c["text"] for c in message.get("result", {}).get("content", []) if c.get("type") == "text"]


def measured(exchanges: list[Exchange], work: Path) -> list[Measured]:
    groups: dict[str, list[str]] = {}
    forms: list[list[list[str]]] = []
    outcomes = []
    for i, e in enumerate(exchanges):
        bare, via = e.messages()
        outcomes.append(compare(bare, via))
        groups[f"{i}/bare"], groups[f"{i}/via"] = texts_of(bare), texts_of(via)
        forms.append([lossless_forms(t) for t in texts_of(bare)])
        for j, item in enumerate(forms[-1]):
            for k, form in enumerate(item):
                groups[f"{i}/{j}/{k}"] = [form]
    counts = count_tokens(groups, work)
    out = []
    for i, e in enumerate(exchanges):
        bare, via = e.messages()
        best = sum(min(counts[f"{i}/{j}/{k}"] for k in range(len(item))) for j, item in enumerate(forms[i]))
        out.append(Measured(
            e,
            outcomes[i],
            (sum(len(t.encode()) for t in texts_of(bare)), sum(len(t.encode()) for t in texts_of(via))),
            (counts[f"{i}/bare"], counts[f"{i}/via"]),
            best,
        ))  # fmt: skip
    return out
