"""Writes bench/estimator/: texts the plugin's token estimator is calibrated
against (crates/core/src/stage/budget/estimate.rs; the calibration test is
tests/estimator.rs). Together with bench/corpus/, the repository's own code
and the TOON forms the test makes of every JSON text, they cover what MCP
servers return: the demo server's results, diffs, logs in several shapes,
JSON with non-Latin scripts and emoji, Markdown, CSV, SQL, the shapes
that tokenize worst (base64, hex digests, UUIDs), and customer tables of
names, emails and cities in many languages and scripts
(bench/international.py) as JSON, CSV, Python's `str(rows)` and escaped
JSON.

Deterministic: fixed seeds, the demo server's own generators, and diffs of
fixed commits. The files are committed; rerun after changing this script.

Run: .venv/bin/python bench/make_estimator_corpus.py
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "estimator"
sys.path.insert(0, str(ROOT / "examples"))

import demo_server as demo  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import international  # noqa: E402

rng = random.Random(15)


def write(name: str, text: str) -> None:
    (OUT / name).write_text(text, encoding="utf-8")


def demo_results() -> None:
    """The demo server's tool results, as its tools build them."""
    write("demo-list_users.json", json.dumps(demo.users(40), indent=2, ensure_ascii=False))
    rows = demo.orders(120)
    write("demo-search_orders.json", json.dumps({"total": len(rows), "page": 1, "items": rows[:30]}))
    write("demo-list_products.json", json.dumps(demo.products(25), separators=(",", ":")))
    write("demo-get_config.json", json.dumps(demo.CONFIG, indent=2))
    write("demo-describe_project.txt", demo.PROSE)
    write("demo-export_logs.json", json.dumps(demo.log_rows(80_000)))
    write("demo-fetch_docs_page.html", demo.DOCS_PAGE)
    write("demo-get_attachment.json", json.dumps(demo.attachment(), indent=2))
    write("demo-inventory_report.json", json.dumps(demo.inventory_rows(), indent=2))


def diffs() -> None:
    """Unified diffs of fixed commits of this repository."""
    for commit in ("e3da6fe", "3d8fba8", "fb19727"):
        out = subprocess.run(
            ["git", "show", "--format=commit %H%nAuthor: %an%n%n    %s%n", commit, "--", "src", "tests"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        write(f"diff-{commit}.patch", out[:120_000])


def logs() -> None:
    ips = [f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}" for _ in range(30)]
    paths = ["/api/v2/orders", "/api/v2/orders/{}", "/healthz", "/static/app.{}.js", "/login", "/api/v2/search?q={}"]
    agents = ["Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36", "curl/8.5.0", "python-httpx/0.28.1"]
    lines = []
    for i in range(500):
        path = rng.choice(paths).format(rng.randrange(10**6))
        lines.append(
            f'{rng.choice(ips)} - - [12/Nov/2026:{8 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d} +0000] '
            f'"{rng.choice(["GET", "POST", "GET", "DELETE"])} {path} HTTP/1.1" {rng.choice([200, 200, 200, 201, 304, 404, 500])} '
            f'{rng.randrange(100, 90000)} "-" "{rng.choice(agents)}" rt={rng.random():.3f}'
        )
    write("log-nginx.log", "\n".join(lines) + "\n")

    lines = []
    for i in range(500):
        lines.append(
            json.dumps(
                {
                    "ts": f"2026-11-12T09:{i // 60 % 60:02d}:{i % 60:02d}.{rng.randrange(1000):03d}Z",
                    "level": rng.choice(["DEBUG", "INFO", "INFO", "WARN", "ERROR"]),
                    "logger": rng.choice(["app.http", "app.db.pool", "worker.billing", "grpc.server"]),
                    "trace_id": uuid.UUID(int=rng.getrandbits(128)).hex,
                    "msg": rng.choice(["request completed", "cache miss", "retrying after timeout", "connection reset by peer"]),
                    "duration_ms": round(rng.uniform(0.1, 900), 2),
                }
            )
        )
    write("log-json.ndjson", "\n".join(lines) + "\n")

    trace = []
    for i in range(60):
        trace.append("Traceback (most recent call last):")
        for depth in range(rng.randrange(4, 12)):
            module = rng.choice(["app/handlers/orders.py", "app/db/session.py", "/usr/lib/python3.12/asyncio/tasks.py", "app/services/billing.py"])
            trace.append(f'  File "{module}", line {rng.randrange(10, 900)}, in {rng.choice(["handle", "run", "_execute", "charge", "__call__"])}')
            code = rng.choice(["result = await self.session.execute(stmt)", "return fn(*args, **kwargs)", "raise TimeoutError(msg)", 'amount = Decimal(row["total"]) * rate'])
            trace.append(f"    {code}")
        trace.append(f"{rng.choice(['TimeoutError', 'KeyError', 'sqlalchemy.exc.OperationalError'])}: {rng.choice(['deadline exceeded after 30s', repr('customer_id'), '(psycopg.OperationalError) server closed the connection unexpectedly'])}")
        trace.append("")
    write("log-traceback.txt", "\n".join(trace))

    lines = []
    for i in range(400):
        lines.append(
            f"[2026-11-12 09:{i // 60 % 60:02d}:{i % 60:02d}.{rng.randrange(1000):03d}][{rng.randrange(100, 999)}][{rng.choice(['info', 'debug', 'warning'])}]"
            f"[{rng.choice(['http', 'upstream', 'wasm', 'router', 'pool'])}] [source/common/{rng.choice(['http/conn_manager_impl.cc', 'router/router.cc', 'upstream/cluster_manager_impl.cc'])}:{rng.randrange(100, 2000)}] "
            f"[Tags: \"ConnectionId\":\"{rng.randrange(10000)}\",\"StreamId\":\"{rng.getrandbits(63)}\"] {rng.choice(['request end stream', 'creating a new connection', 'upstream reset: reset reason: connection termination', 'wasm log mcp_toon: encoded=1 bytes=4211->1490'])}"
        )
    write("log-envoy.log", "\n".join(lines) + "\n")


def unicode_json() -> None:
    cjk = ["东京", "大阪", "北京市", "上海", "서울", "부산", "台北", "ソウル", "札幌", "深圳"]
    words = ["商品", "在庫あり", "発送済み", "キャンセル", "배송 중", "결제 완료", "退货", "待处理"]
    rows = [
        {"id": i, "名前": f"{rng.choice(['田中', '李', '김', '王', '佐藤'])}{rng.choice(['太郎', '明', '민준', '芳', '花子'])}", "city": rng.choice(cjk), "status": rng.choice(words), "price": rng.randrange(100, 99999)}
        for i in range(300)
    ]
    write("unicode-cjk.json", json.dumps(rows, ensure_ascii=False))

    emoji = ["🚀", "✅", "❌", "🔥", "👍🏽", "🇵🇹", "🧪", "📦", "👩‍💻", "🎉"]
    msgs = [
        {"user": rng.choice(["zoë", "josé", "øystein", "ana-maría", "françois"]), "text": f"{rng.choice(['deploy done', 'tests green', 'rollback!', 'LGTM', 'ship it'])} {rng.choice(emoji)}{rng.choice(emoji)}", "reactions": {rng.choice(emoji): rng.randrange(1, 9)}}
        for _ in range(400)
    ]
    write("unicode-emoji.json", json.dumps(msgs, ensure_ascii=False))

    names = ["Дмитрий Иванов", "Αλέξανδρος Παπαδόπουλος", "محمد الأحمد", "राहुल शर्मा", "Nguyễn Văn An", "Łukasz Żółć", "Ægir Þórsson", "יוסי כהן", "สมชาย ใจดี", "Đorđe Marković"]
    people = [{"name": rng.choice(names), "note": rng.choice(["Привет, как дела?", "Καλημέρα σας", "مرحبا بالعالم", "नमस्ते दुनिया", "Xin chào", "Dzień dobry", "Góðan daginn"]), "n": i} for i in range(400)]
    write("unicode-scripts.json", json.dumps(people, ensure_ascii=False))
    write("unicode-escaped.json", json.dumps(people[:150]))


def misc() -> None:
    md = []
    for i in range(40):
        md.append(f"## {i + 1}. {rng.choice(['Install', 'Configure', 'Deploy', 'Observe', 'Troubleshoot'])} the `{rng.choice(['gateway', 'plugin', 'cluster', 'listener'])}`\n")
        md.append("Set `max_body_bytes` below the listener's limit; see [the reference](https://example.com/docs#ref) for **every** field.\n")
        md.append("| field | default | meaning |\n|---|---|---|\n| `ttl_s` | 600 | seconds a page is kept |\n| `slots` | 4096 | pages held at most |\n")
        md.append("```sh\ncurl -s localhost:9901/stats/prometheus | grep mcp_toon_\n```\n")
    write("markdown-docs.md", "\n".join(md))

    csv = ["id,sku,warehouse,qty,unit_price,updated_at"]
    for i in range(1500):
        csv.append(f"{i},SKU-{rng.randrange(10000):04d},{rng.choice(['LIS-1', 'OSA-2', 'NBO-1'])},{rng.randrange(1000)},{rng.uniform(0.5, 999):.2f},2026-11-{1 + i % 28:02d}")
    write("table.csv", "\n".join(csv) + "\n")

    sql = []
    for i in range(300):
        sql.append(
            f"SELECT o.id, o.total, c.email FROM orders o JOIN customers c ON c.id = o.customer_id "
            f"WHERE o.created_at >= '2026-11-{1 + i % 28:02d}' AND o.status IN ('paid', 'shipped') ORDER BY o.total DESC LIMIT {rng.randrange(10, 500)};"
        )
    write("query.sql", "\n".join(sql) + "\n")

    blobs = {
        "sha256": [hashlib.sha256(str(i).encode()).hexdigest() for i in range(200)],
        "uuids": [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(200)],
        "blob": base64.b64encode(rng.randbytes(12000)).decode(),
        "urlsafe": base64.urlsafe_b64encode(rng.randbytes(6000)).decode(),
    }
    write("opaque-ids.json", json.dumps(blobs, indent=1))

    numbers = [[round(rng.uniform(-1000, 1000), rng.randrange(0, 7)) for _ in range(8)] for _ in range(600)]
    write("numbers.json", json.dumps(numbers))


def customer_tables() -> None:
    """Customer exports in many languages (names as natives write them,
    emails transliterated), in the forms database tools send. Their own
    seeds: the files above do not move."""
    three = international.customers(300, seed=3, langs=["pl", "is", "vi"])
    write("intl-customers-pl-is-vi.json", json.dumps(three, ensure_ascii=False, separators=(",", ":")))
    mixed = international.customers(400, seed=4)
    write("intl-customers-mixed.json", json.dumps(mixed, ensure_ascii=False))
    latin = international.customers(300, seed=5, langs=["de", "fr", "es", "cs", "tr", "hu", "ro"])
    write("intl-customers-latin.json", json.dumps(latin, ensure_ascii=False, indent=2))
    others = international.customers(300, seed=6, langs=["ru", "uk", "el", "ar", "he", "hi", "th", "zh", "ja", "ko"])
    write("intl-customers-scripts.json", json.dumps(others, ensure_ascii=False, separators=(",", ":")))
    keys = list(mixed[0])
    csv = [",".join(keys)] + [",".join(str(r[k]) for k in keys) for r in mixed]
    write("intl-customers.csv", "\n".join(csv) + "\n")
    write("intl-customers-python.txt", str(international.customers(200, seed=7)))
    write("intl-customers-escaped.json", json.dumps(international.customers(150, seed=8)))


def main() -> None:
    OUT.mkdir(exist_ok=True)
    demo_results()
    diffs()
    logs()
    unicode_json()
    misc()
    customer_tables()
    for p in sorted(OUT.iterdir()):
        print(f"{p.name}: {p.stat().st_size} bytes")


if __name__ == "__main__":
    main()
