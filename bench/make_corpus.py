"""Writes bench/corpus/: tool results shaped like those real MCP servers
return (issue trackers, CRMs, log search, web fetch, docs), each saved as
the JSON-RPC response body of a `tools/call`, for `make bench` (token
savings). Deterministic: a fixed seed, no network. The files are committed;
rerun after changing this script.

Run: python3 bench/make_corpus.py
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

OUT = Path(__file__).resolve().parent / "corpus"
rng = random.Random(7)

FIRST = ["Ada", "Grace", "Linus", "Margaret", "Ken", "Barbara", "Dennis", "Frances", "Edsger", "Radia", "Guido", "Sophie", "Bjarne", "Hedy", "Alan", "Joan"]
LAST = ["Lovelace", "Hopper", "Torvalds", "Hamilton", "Thompson", "Liskov", "Ritchie", "Allen", "Dijkstra", "Perlman", "van Rossum", "Wilson", "Stroustrup", "Lamarr", "Turing", "Clarke"]
CITIES = [("Berlin", "DE"), ("Lyon", "FR"), ("Austin", "US"), ("Osaka", "JP"), ("Leeds", "GB"), ("Porto", "PT"), ("Toronto", "CA"), ("Pune", "IN")]
VERBS = ["Fix", "Add", "Remove", "Refactor", "Document", "Speed up", "Handle", "Deprecate"]
THINGS = ["retry logic in the sync worker", "pagination on /v2/orders", "flaky login test", "CSV export of invoices", "timezone handling in reports", "memory growth in the cache", "OAuth token refresh", "dark mode toggle"]


def response(text: str, id: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}], "isError": False}}


def ts(day: int, minute: int) -> str:
    return f"2026-11-{1 + day % 28:02d}T{8 + minute // 60 % 12:02d}:{minute % 60:02d}:{rng.randrange(60):02d}Z"


def name() -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def github_issues() -> str:
    rows = []
    for i in range(60):
        rows.append(
            {
                "number": 4100 + i,
                "title": f"{rng.choice(VERBS)} {rng.choice(THINGS)}",
                "state": rng.choice(["open", "open", "closed"]),
                "author": name().split()[0].lower() + str(rng.randrange(100)),
                "comments": rng.randrange(0, 40),
                "created_at": ts(i, i * 37),
                "updated_at": ts(i + 3, i * 53),
                "milestone": rng.choice(["v2.4", "v2.5", "backlog"]),
            }
        )
    return json.dumps(rows, indent=2)


def crm_contacts_page() -> str:
    items = []
    for i in range(50):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        city, country = rng.choice(CITIES)
        items.append(
            {
                "id": f"c_{rng.randrange(16**8):08x}",
                "name": f"{first} {last}",
                "email": f"{first.lower()}.{last.lower().replace(' ', '')}@example.com",
                "company": rng.choice(["Acme GmbH", "Globex", "Initech", "Umbrella Ltd", "Hooli", "Vandelay Industries"]),
                "city": city,
                "country": country,
                "lifetime_value": round(rng.uniform(100, 25000), 2),
                "last_contacted": ts(i, i * 11)[:10],
            }
        )
    return json.dumps({"total": 1342, "page": 3, "per_page": 50, "has_more": True, "items": items}, separators=(",", ":"))


def orders_nested() -> str:
    rows = []
    for i in range(40):
        city, country = rng.choice(CITIES)
        rows.append(
            {
                "order_id": 880000 + i * 7,
                "status": rng.choice(["paid", "shipped", "delivered", "refunded"]),
                "customer": {"id": 1000 + rng.randrange(500), "name": name(), "tier": rng.choice(["gold", "silver", "basic"])},
                "shipping": {"city": city, "country": country, "carrier": rng.choice(["DHL", "UPS", "FedEx"])},
                "total": {"amount": round(rng.uniform(9, 900), 2), "currency": "EUR"},
                "items": rng.randrange(1, 9),
            }
        )
    return json.dumps(rows, separators=(",", ":"))


def service_logs() -> str:
    rows = []
    for i in range(120):
        level = rng.choices(["INFO", "WARN", "ERROR", "DEBUG"], [70, 15, 5, 10])[0]
        row = {
            "ts": ts(0, i),
            "level": level,
            "service": rng.choice(["api", "billing", "auth", "worker"]),
            "msg": rng.choice(["request completed", "cache miss", "retrying upstream call", "token refreshed", "slow query", "job finished"]),
            "latency_ms": rng.randrange(2, 900),
            "trace_id": f"{rng.randrange(16**16):016x}",
        }
        if level == "ERROR":
            # Rows that carry an extra field: semi-uniform.
            row["error"] = rng.choice(["ECONNRESET", "timeout after 30s", "HTTP 503 from payments"])
        rows.append(row)
    return json.dumps(rows, separators=(",", ":"))


def web_page() -> str:
    paras = "".join(
        f"<p>Section {i}: The <a href=\"/docs/{i}\">configuration guide</a> explains how to <strong>enable caching</strong> for "
        f"upstream clusters, with examples for {rng.choice(['YAML', 'JSON', 'Helm'])} deployments and notes on limits.</p>\n"
        for i in range(25)
    )
    rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in [("timeout", "30s"), ("retries", "3"), ("max_body", "1 MiB"), ("tls", "on")])
    return (
        "<!DOCTYPE html><html><head><title>Gateway caching guide</title><style>body{font-family:sans-serif}.nav{float:left}</style>"
        "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments);}</script></head>"
        "<body><div class=\"nav\"><ul><li><a href=\"/\">Home</a></li><li><a href=\"/docs\">Docs</a></li><li><a href=\"/blog\">Blog</a></li></ul></div>"
        f"<main><h1>Caching at the gateway</h1>\n{paras}<h2>Defaults</h2><table><tr><th>setting</th><th>value</th></tr>{rows}</table></main>"
        "<footer><p>&copy; 2026 Example Corp. All rights reserved.</p></footer></body></html>"
    )


def prose() -> str:
    sentences = [
        "The migration moved every tenant to the new storage tier without downtime.",
        "Two customers reported slower exports during the window, both resolved by a cache warm-up.",
        "We recommend scheduling the next phase after the quarter closes.",
        "Costs fell by roughly a fifth, mostly from retiring the old replicas.",
        "Open questions remain about retention for audit logs older than seven years.",
    ]
    return "\n\n".join(" ".join(rng.choice(sentences) for _ in range(5)) for _ in range(8))


def pretty_config() -> str:
    cfg = {
        "service": "billing",
        "replicas": 3,
        "resources": {"cpu": "500m", "memory": "512Mi"},
        "env": {f"FEATURE_{k}": rng.choice([True, False]) for k in ["A", "B", "C", "D", "E", "F"]},
        "routes": [{"path": f"/v2/{p}", "timeout_s": rng.choice([5, 10, 30]), "auth": rng.choice(["jwt", "mtls"])} for p in ["invoices", "refunds", "plans"]],
        "owners": ["team-payments", "sre"],
    }
    return json.dumps(cfg, indent=4)


def small_table() -> str:
    return json.dumps([{"id": i, "ok": True} for i in range(3)])


def _sqlite_rows(query: str, n: int, seed: int) -> list[dict]:
    """Rows as PyPI `mcp-server-sqlite` (2025.4.25) reads them:
    `sqlite3.Row`, then `[dict(row) for row in cursor.fetchall()]`; it
    answers with `str()` of that list."""
    import sqlite3

    from international import customers

    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    conn.execute(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, email TEXT, city TEXT, country TEXT,"
        " phone TEXT, balance REAL, active INTEGER, created_at TEXT, note TEXT)"
    )
    notes = [None, None, None, "VIP", "prefers email", "late payer", None, "it's complicated"]
    local = random.Random(seed)
    for c in customers(n, seed=seed, langs=["pl", "is", "vi", "de", "fr", "es"]):
        conn.execute(
            "INSERT INTO customers VALUES (?,?,?,?,?,?,?,?,?,?)",
            (c["id"], c["name"], c["email"], c["city"], c["country"], c["phone"], c["balance"], int(c["active"]), c["created_at"], local.choice(notes)),
        )
    return [dict(row) for row in conn.execute(query).fetchall()]


def sqlite_select() -> str:
    # `SELECT * FROM sales … LIMIT 500`, as mcp-server-sqlite's read_query
    # answers it, on the table its own demo prompt (`mcp-demo`, topic
    # "retail sales") has an agent build.
    import sqlite3

    local = random.Random(25)
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    conn.execute(
        "CREATE TABLE sales (sale_id INTEGER PRIMARY KEY, store_id INTEGER, product TEXT, category TEXT,"
        " quantity INTEGER, revenue REAL, sale_date TEXT)"
    )
    products = [("Espresso beans", "Coffee"), ("Oat milk", "Dairy"), ("Croissant", "Bakery"), ("Green tea", "Tea"), ("Bagel", "Bakery"), ("Cold brew", "Coffee"), ("Muffin", "Bakery"), ("Chai latte", "Tea")]
    for i in range(1, 801):
        product, category = local.choice(products)
        qty = local.randrange(1, 20)
        conn.execute(
            "INSERT INTO sales VALUES (?,?,?,?,?,?,?)",
            (i, local.randrange(1, 13), product, category, qty, round(qty * local.uniform(2, 15), 2), f"2025-{local.randrange(1, 13):02d}-{local.randrange(1, 29):02d}"),
        )
    return str([dict(row) for row in conn.execute("SELECT * FROM sales ORDER BY sale_id LIMIT 500").fetchall()])


def sqlite_orders() -> str:
    # The same server on an order table with timestamps (TOON quotes them:
    # they hold `:`).
    import sqlite3

    local = random.Random(24)
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    conn.execute(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, product TEXT, quantity INTEGER,"
        " unit_price REAL, status TEXT, shipped INTEGER, created_at TEXT)"
    )
    products = ["USB-C cable", "Laptop stand", "Wireless mouse", "Mechanical keyboard", "27in monitor", "Webcam", "Desk lamp", "Noise-cancelling headphones"]
    for i in range(1, 801):
        status = local.choice(["paid", "shipped", "delivered", "refunded", "pending"])
        conn.execute(
            "INSERT INTO orders VALUES (?,?,?,?,?,?,?,?)",
            (i, local.randrange(1, 300), local.choice(products), local.randrange(1, 6), round(local.uniform(5, 900), 2), status,
             int(status in ("shipped", "delivered")), f"2025-{local.randrange(1, 13):02d}-{local.randrange(1, 29):02d} {local.randrange(24):02d}:{local.randrange(60):02d}:00"),
        )
    return str([dict(row) for row in conn.execute("SELECT * FROM orders ORDER BY id LIMIT 500").fetchall()])


def sqlite_customers() -> str:
    # The same server on a customer table of many languages.
    return str(_sqlite_rows("SELECT * FROM customers ORDER BY id LIMIT 500", 800, 21))


def sqlite_aggregate() -> str:
    return str(_sqlite_rows("SELECT country, COUNT(*) AS customers, ROUND(AVG(balance), 2) AS avg_balance, SUM(active) AS active FROM customers GROUP BY country ORDER BY country", 800, 21))


def python_tuples() -> str:
    # `str(cursor.fetchall())` with sqlite3's default row factory: tuples.
    rows = _sqlite_rows("SELECT id, name, city, balance, active FROM customers ORDER BY id LIMIT 200", 800, 22)
    return str([tuple(r.values()) for r in rows])


def duckdb_escaped() -> str:
    # Python's `json.dumps` defaults (`ensure_ascii`, `", "` and `": "`),
    # as DuckDB tools send names: every non-ASCII letter a `\uXXXX` escape.
    from international import customers

    return json.dumps(customers(200, seed=23, langs=["pl", "is", "vi", "de", "cs"]))


PAYLOADS = {
    "tabular-github-issues": github_issues,
    "paged-crm-contacts": crm_contacts_page,
    "nested-orders": orders_nested,
    "semi-uniform-logs": service_logs,
    "html-web-page": web_page,
    "prose-report": prose,
    "pretty-json-config": pretty_config,
    "small-table": small_table,
    # Database results (issue 39), appended so the files above keep their
    # bytes: their generators draw from their own seeds.
    "sqlite-select-500": sqlite_select,
    "sqlite-orders-500": sqlite_orders,
    "sqlite-customers-500": sqlite_customers,
    "sqlite-aggregate": sqlite_aggregate,
    "python-tuples": python_tuples,
    "duckdb-escaped-json": duckdb_escaped,
}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, make in PAYLOADS.items():
        (OUT / f"{name}.json").write_text(json.dumps(response(make()), separators=(",", ":")))
    print(f"wrote {len(PAYLOADS)} payloads to {OUT}")


if __name__ == "__main__":
    main()
