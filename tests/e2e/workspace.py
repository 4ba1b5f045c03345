"""What the real-server tier (tests/e2e/test_real_servers.py) and its
benchmark (scripts/bench_real.py) work on: a project folder for the file
server, a git repository with indented code changes, a knowledge graph for
the memory server, and the calls an agent makes to each server.

The files are what coding agents read and send back: code whose indentation
and aligned columns matter, diffs, an HTML page, a PEM certificate, JSON
configuration with nulls, a JSON table, a log with aligned columns. Every
call plan leaves its server as it found it, so the same plan can run
directly and through Envoy and both must get the same answers.
"""

from __future__ import annotations

import base64
import json
import random
import re
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import peers

# --- the project folder (server-filesystem) -------------------------------------------

PRICING_PY = '''"""Price rules for the order service."""

from decimal import Decimal

TAX_RATES = {
    "PT":  Decimal("0.23"),   # standard rate
    "DE":  Decimal("0.19"),
    "FR":  Decimal("0.20"),   # metropolitan France
}


class PriceRule:
    def __init__(self, sku: str, base: Decimal,  discount: Decimal = Decimal(0)):
        self.sku      = sku
        self.base     = base
        self.discount = discount

    def net(self, quantity: int) -> Decimal:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        price = self.base * quantity
        if quantity >= 10:
            price -= price * self.discount
        return price.quantize(Decimal("0.01"))



    def gross(self, quantity: int, country: str) -> Decimal:
        rate = TAX_RATES.get(country, Decimal("0.21"))   \t# EU default
        return (self.net(quantity) * (1 + rate)).quantize(Decimal("0.01"))   
'''

BUILD_MK = "build:\n\tcargo build --release\n\t@echo  done\n\ntest: build\n\tcargo test   --all\n"

INDEX_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Order service &mdash; status</title>
  <style>
    body { font-family: system-ui, sans-serif; margin: 0; }
    table.status { border-collapse: collapse; width: 100%; }
  </style>
  <script>
    window.dataLayer = window.dataLayer || [];
  </script>
</head>
<body>
  <nav><a href="/">Home</a> | <a href="/orders/">Orders</a> | <a href="/status/">Status</a></nav>
  <main>
    <h1>Service status</h1>
    <p>All systems    operational.  Last incident:   <time datetime="2026-11-02">2 November</time>.</p>
    <table class="status">
      <tr><th>Component</th><th>State</th><th>Latency (p99)</th></tr>
      <tr><td>API</td><td class="ok">up</td><td>120 ms</td></tr>
      <tr><td>Payments</td><td class="ok">up</td><td>340 ms</td></tr>
      <tr><td>Search</td><td class="warn">degraded</td><td>1,900 ms</td></tr>
    </table>
    <pre><code>curl -s https://status.example.com/api/v1/summary   | jq .status</code></pre>
  </main>
</body>
</html>
"""

NOTES_MD = """# Release notes

- Prices are rounded **after** the discount.  
- Tax rates come from `TAX_RATES`.

```python
    rule = PriceRule("SKU-1", Decimal("9.90"))
    rule.gross(12,   "PT")
```
"""


def pem_certificate() -> str:
    """A PEM block: 48 bytes of header-like DER and 720 random bytes, base64
    in 64-column lines (RFC 7468 §2)."""
    rnd = random.Random(7)
    der = bytes([0x30, 0x82, 0x03, 0x00]) + bytes(rnd.randrange(256) for _ in range(764))
    b64 = base64.b64encode(der).decode()
    lines = [b64[i : i + 64] for i in range(0, len(b64), 64)]
    return "-----BEGIN CERTIFICATE-----\n" + "\n".join(lines) + "\n-----END CERTIFICATE-----\n"


SETTINGS = {
    "service": "orders",
    "listen": {"host": "0.0.0.0", "port": 8080, "tls": None},
    "database": {"url": "postgres://orders@db:5432/orders", "pool": 10, "replica": None, "timeout_ms": 2500},
    "banner": "Welcome  to   the order service",
    "features": {"new_checkout": True, "legacy_export": False, "beta_search": None},
    "retry": {"attempts": 3, "backoff_ms": [100, 400, 1600], "jitter": 0.25},
    "owners": ["team-orders@example.com", None],
}


def inventory_rows() -> list[dict[str, Any]]:
    rnd = random.Random(11)
    return [
        {
            "sku": f"SKU-{1000 + i}",
            "name": f"Widget {chr(65 + i % 26)}{i}",
            "warehouse": ["LIS", "BER", "PAR"][i % 3],
            "on_hand": rnd.randint(0, 500),
            "price": round(rnd.uniform(1, 90), 2),
            "active": i % 5 != 0,
        }
        for i in range(30)
    ]


def app_log() -> str:
    rnd = random.Random(3)
    levels = ["INFO ", "WARN ", "INFO ", "ERROR"]
    lines = []
    for i in range(24):
        level = levels[rnd.randrange(4)]
        lines.append(f"2026-11-30T10:{i:02d}:{rnd.randint(0, 59):02d}Z  {level}  orders-{rnd.randint(1, 3)}   req={rnd.randint(1000, 9999)}   {rnd.choice(['GET /orders', 'POST /orders', 'GET /orders/42'])}   {rnd.randint(3, 900):>4} ms")
    return "\n".join(lines) + "\n"


def png(width: int = 4, height: int = 4) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + bytes(v for x in range(width) for v in (x * 60, y * 60, 128)) for y in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def make_project(root: Path) -> dict[str, Path]:
    """The file server's folder; returns the files by short name."""
    files = {
        "pricing.py": ("src/pricing.py", PRICING_PY),
        "build.mk": ("src/build.mk", BUILD_MK),
        "index.html": ("web/index.html", INDEX_HTML),
        "server.pem": ("certs/server.pem", pem_certificate()),
        "settings.json": ("config/settings.json", json.dumps(SETTINGS, indent=2) + "\n"),
        "flags.json": ("config/flags.json", json.dumps(SETTINGS["features"]) + "\n"),
        "inventory.json": ("data/inventory.json", json.dumps(inventory_rows(), indent=2) + "\n"),
        "app.log": ("logs/app.log", app_log()),
        "notes.md": ("notes.md", NOTES_MD),
    }
    out = {}
    for short, (rel, text) in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
        out[short] = path
    logo = root / "img" / "logo.png"
    logo.parent.mkdir(parents=True, exist_ok=True)
    logo.write_bytes(png())
    out["logo.png"] = logo
    return out


def filesystem_calls(root: Path, files: dict[str, Path]) -> list[dict[str, Any]]:
    texts = ["pricing.py", "build.mk", "index.html", "server.pem", "settings.json", "flags.json", "inventory.json", "app.log", "notes.md"]
    return [
        {"name": "list_allowed_directories", "arguments": {}},
        {"name": "list_directory", "arguments": {"path": str(root / "src")}},
        {"name": "list_directory_with_sizes", "arguments": {"path": str(root / "config")}},
        {"name": "directory_tree", "arguments": {"path": str(root)}},
        {"name": "search_files", "arguments": {"path": str(root), "pattern": "**/*.json"}},
        *({"name": "read_text_file", "arguments": {"path": str(files[f])}} for f in texts),
        {"name": "read_text_file", "arguments": {"path": str(files["pricing.py"]), "head": 12}},
        {"name": "read_multiple_files", "arguments": {"paths": [str(files["pricing.py"]), str(files["settings.json"])]}},
        {"name": "read_media_file", "arguments": {"path": str(files["logo.png"])}},
    ]


# --- the git repository (mcp-server-git) ------------------------------------------------

SHAPES_V1 = '''import math


class Circle:
    def __init__(self, r):
        self.r = r

    def area(self):
        return math.pi * self.r ** 2


class Square:
    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side * self.side
'''

SHAPES_V2 = '''import math


class Circle:
    def __init__(self, r):
        if r < 0:
            raise ValueError("negative radius")
        self.r = r

    def area(self):
        return math.pi * self.r ** 2

    def perimeter(self):
        return 2 * math.pi * self.r


class Square:
    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side * self.side
'''

# The working tree: indented edits, a realigned column, a tab-indented file.
SHAPES_V3 = '''import math


class Circle:
    def __init__(self, r):
        if r < 0:
            raise ValueError(f"negative radius: {r}")
        self.r = r

    def area(self):
        return math.pi * self.r ** 2

    def perimeter(self):
        return 2 * math.pi * self.r


class Square:
    def __init__(self, side):
        self.side  = side
        self.label = "square"

    def area(self):
        return self.side * self.side

    def scaled(self, k):
        for _ in range(1):
            return Square(self.side * k)
'''

UTIL_GO_V1 = "package util\n\nfunc Clamp(v, lo, hi int) int {\n\tif v < lo {\n\t\treturn lo\n\t}\n\treturn v\n}\n"
UTIL_GO_V2 = "package util\n\nfunc Clamp(v, lo, hi int) int {\n\tif v < lo {\n\t\treturn lo\n\t}\n\tif v > hi {\n\t\treturn hi\n\t}\n\treturn v\n}\n"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada Lovelace",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Lovelace",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str, date: str = "2026-11-01T10:00:00+00:00") -> str:
    env = {**GIT_ENV, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date, "PATH": "/usr/bin:/bin"}
    r = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {r.stderr}")
    return r.stdout


def make_repo(repo: Path) -> None:
    """Two commits, then unstaged indented changes in two files."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "shapes.py").write_text(SHAPES_V1)
    (repo / "util.go").write_text(UTIL_GO_V1)
    (repo / "README.md").write_text("# shapes\n\nGeometry  helpers.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Shapes and a clamp helper")
    (repo / "shapes.py").write_text(SHAPES_V2)
    git(repo, "commit", "-q", "-am", "Circle: validate the radius, add the perimeter", date="2026-11-02T11:30:00+00:00")
    (repo / "shapes.py").write_text(SHAPES_V3)
    (repo / "util.go").write_text(UTIL_GO_V2)


def git_calls(repo: Path) -> list[dict[str, Any]]:
    r = str(repo)
    return [
        {"name": "git_status", "arguments": {"repo_path": r}},
        {"name": "git_diff_unstaged", "arguments": {"repo_path": r}},
        {"name": "git_diff_staged", "arguments": {"repo_path": r}},
        {"name": "git_diff", "arguments": {"repo_path": r, "target": "HEAD~1"}},
        {"name": "git_log", "arguments": {"repo_path": r}},
        {"name": "git_show", "arguments": {"repo_path": r, "revision": "HEAD"}},
        {"name": "git_show", "arguments": {"repo_path": r, "revision": "HEAD~1"}},
        {"name": "git_branch", "arguments": {"repo_path": r, "branch_type": "local"}},
    ]


# --- the knowledge graph (server-memory) ----------------------------------------------------

PEOPLE = ["Ada Lovelace", "Charles Babbage", "Mary Somerville", "Augustus De Morgan"]
THINGS = ["Analytical Engine", "Difference Engine", "Notes on the Engine", "Bernoulli numbers"]


def seed_graph(path: Path) -> None:
    """The memory server's store (JSON lines, its own format)."""
    lines = [{"type": "entity", "name": n, "entityType": "person", "observations": [f"{n}  wrote  letters", "lived in London"]} for n in PEOPLE]
    lines += [{"type": "entity", "name": n, "entityType": "work", "observations": ["nineteenth   century"]} for n in THINGS]
    lines += [{"type": "relation", "from": PEOPLE[i], "to": THINGS[i], "relationType": "worked on"} for i in range(4)]
    path.write_text("\n".join(json.dumps(line) for line in lines))


def memory_calls() -> list[dict[str, Any]]:
    """Reads, then writes that are undone at the end: the graph is left as
    it was, and the last read_graph equals the first."""
    new = [{"name": f"Student {i}", "entityType": "person", "observations": [f"attended  lecture {i}"]} for i in range(6)]
    relations = [{"from": f"Student {i}", "to": t, "relationType": "studied"} for i in range(6) for t in THINGS[:2]]
    return [
        {"name": "read_graph", "arguments": {}},
        {"name": "search_nodes", "arguments": {"query": "Engine"}},
        {"name": "open_nodes", "arguments": {"names": PEOPLE[:2]}},
        {"name": "create_entities", "arguments": {"entities": new}},
        {"name": "create_relations", "arguments": {"relations": relations}},
        {"name": "add_observations", "arguments": {"observations": [{"entityName": "Student 0", "contents": ["asked   about  loops"]}]}},
        {"name": "read_graph", "arguments": {}},
        {"name": "delete_observations", "arguments": {"deletions": [{"entityName": "Student 0", "observations": ["asked   about  loops"]}]}},
        {"name": "delete_relations", "arguments": {"relations": relations}},
        {"name": "delete_entities", "arguments": {"entityNames": [e["name"] for e in new]}},
        {"name": "read_graph", "arguments": {}},
    ]


# --- the clock (mcp-server-time) ------------------------------------------------------------

TIME_CALLS = [
    {"name": "get_current_time", "arguments": {"timezone": "Europe/Lisbon"}},
    {"name": "convert_time", "arguments": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}},
    {"name": "convert_time", "arguments": {"source_timezone": "America/New_York", "time": "09:30", "target_timezone": "Europe/Berlin"}},
]
_INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")
_WEEKDAY = re.compile(r"\b(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b")


def mask_instants(body: str) -> str:
    """The clock moves between the direct and the proxied call: instants
    (and the weekday, which moves at midnight) become placeholders on both
    sides before they are compared; the JSON layout around them stays."""
    return _WEEKDAY.sub("WEEKDAY", _INSTANT.sub("INSTANT", body))


# --- all four -------------------------------------------------------------------------------


@dataclass
class Servers:
    """The four servers, started on `work` (each a supergateway bridge)."""

    root: Path
    files: dict[str, Path]
    repo: Path
    graph: Path
    bridged: dict[str, peers.Bridged]

    def plans(self) -> dict[str, list[dict[str, Any]]]:
        return {
            "filesystem": filesystem_calls(self.root, self.files),
            "git": git_calls(self.repo),
            "memory": memory_calls(),
            "time": TIME_CALLS,
        }

    def stop(self) -> None:
        for b in self.bridged.values():
            b.stop()


def start_servers(work: Path) -> Servers:
    root, repo, graph = work / "project", work / "repo", work / "memory.jsonl"
    files = make_project(root)
    make_repo(repo)
    seed_graph(graph)
    bridged: dict[str, peers.Bridged] = {}
    try:
        bridged["filesystem"] = peers.start_bridged("filesystem", [*peers.FILESYSTEM, str(root)], work)
        bridged["git"] = peers.start_bridged("git", [*peers.GIT, "--repository", str(repo)], work)
        bridged["memory"] = peers.start_bridged("memory", peers.MEMORY, work, env={"MEMORY_FILE_PATH": str(graph)})
        bridged["time"] = peers.start_bridged("time", [*peers.TIME, "--local-timezone", "UTC"], work)
    except Exception:
        for b in bridged.values():
            b.stop()
        raise
    return Servers(root, files, repo, graph, bridged)
