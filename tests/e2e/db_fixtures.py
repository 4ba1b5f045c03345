"""The data the database tier (tests/e2e/test_databases.py) and its benchmark
(scripts/bench_databases.py) load into five database MCP servers: a shop's
customers and orders, made here from a fixed seed, so every run loads the
same bytes.

`customers` (6,000 rows: a full export is about 1 MB in every server's
answer) has names, cities and notes in many scripts (Polish, Icelandic,
Vietnamese, German, Portuguese, Turkish, Greek, Japanese, French, Spanish,
English with apostrophes), e-mail addresses, signup dates, decimal credit
limits, booleans and NULLs (phone, note). `orders` (2,400 rows) has
timestamps, decimal totals, currencies, booleans and NULL ship times.

The same rows are written as SQL for PostgreSQL (`postgres_sql`), into a
SQLite file (`write_sqlite`), as CSV files DuckDB reads (`write_csv`) and
as an .xlsx workbook (`write_xlsx`, by openpyxl in .venv-servers, where
excel-mcp-server brings it).

Run as a script to write every form into a folder:
    .venv/bin/python tests/e2e/db_fixtures.py OUT_DIR
"""

from __future__ import annotations

import csv
import random
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

SEED = 39
CUSTOMERS = 6000
ORDERS = 2400

# (given names, family names, cities, e-mail domain), each name with the
# ASCII spelling its e-mail address uses.
PEOPLE: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]], list[str], str]] = {
    "PL": (
        [("Zofia", "zofia"), ("Łukasz", "lukasz"), ("Małgorzata", "malgorzata"), ("Wojciech", "wojciech"), ("Agnieszka", "agnieszka"), ("Grzegorz", "grzegorz")],
        [("Wiśniewska", "wisniewska"), ("Wójcik", "wojcik"), ("Kowalczyk", "kowalczyk"), ("Dąbrowski", "dabrowski"), ("Zieliński", "zielinski"), ("Szczęsna", "szczesna")],
        ["Łódź", "Kraków", "Gdańsk", "Wrocław", "Poznań"],
        "poczta.pl",
    ),
    "IS": (
        [("Guðrún", "gudrun"), ("Þórður", "thordur"), ("Sigríður", "sigridur"), ("Ásgeir", "asgeir"), ("Hildur", "hildur"), ("Ragnar", "ragnar")],
        [("Jónsdóttir", "jonsdottir"), ("Þorsteinsson", "thorsteinsson"), ("Guðmundsdóttir", "gudmundsdottir"), ("Ólafsson", "olafsson"), ("Sigurðardóttir", "sigurdardottir")],
        ["Reykjavík", "Akureyri", "Hafnarfjörður", "Kópavogur", "Ísafjörður"],
        "simnet.is",
    ),
    "VN": (
        [("Văn An", "van.an"), ("Thị Bích", "thi.bich"), ("Hoàng Phúc", "hoang.phuc"), ("Minh Đức", "minh.duc"), ("Thanh Hương", "thanh.huong"), ("Quốc Bảo", "quoc.bao")],
        [("Nguyễn", "nguyen"), ("Trần", "tran"), ("Lê", "le"), ("Phạm", "pham"), ("Huỳnh", "huynh"), ("Võ", "vo")],
        ["Hà Nội", "Thành phố Hồ Chí Minh", "Đà Nẵng", "Huế", "Cần Thơ"],
        "vnmail.vn",
    ),
    "DE": (
        [("Jürgen", "juergen"), ("Käthe", "kaethe"), ("Björn", "bjoern"), ("Gisela", "gisela"), ("Jörg", "joerg")],
        [("Müller", "mueller"), ("Groß", "gross"), ("Schäfer", "schaefer"), ("Köhler", "koehler"), ("Weiß", "weiss")],
        ["München", "Köln", "Düsseldorf", "Nürnberg", "Lübeck"],
        "web.de",
    ),
    "PT": (
        [("João", "joao"), ("Conceição", "conceicao"), ("Inês", "ines"), ("Gonçalo", "goncalo"), ("Estêvão", "estevao")],
        [("Gonçalves", "goncalves"), ("Simões", "simoes"), ("Araújo", "araujo"), ("Magalhães", "magalhaes"), ("Loureiro", "loureiro")],
        ["Lisboa", "Coimbra", "Évora", "Setúbal", "Porto"],
        "sapo.pt",
    ),
    "TR": (
        [("Çağla", "cagla"), ("Şükrü", "sukru"), ("Gülşen", "gulsen"), ("Ömer", "omer"), ("İpek", "ipek")],
        [("Öztürk", "ozturk"), ("Çelik", "celik"), ("Yıldız", "yildiz"), ("Şahin", "sahin"), ("Doğan", "dogan")],
        ["İstanbul", "İzmir", "Ankara", "Eskişehir", "Muğla"],
        "posta.com.tr",
    ),
    "GR": (
        [("Γιώργος", "giorgos"), ("Ελένη", "eleni"), ("Δημήτρης", "dimitris"), ("Αικατερίνη", "aikaterini")],
        [("Παπαδόπουλος", "papadopoulos"), ("Νικολάου", "nikolaou"), ("Γεωργίου", "georgiou"), ("Οικονόμου", "oikonomou")],
        ["Αθήνα", "Θεσσαλονίκη", "Πάτρα", "Ηράκλειο"],
        "otenet.gr",
    ),
    "JP": (
        [("陽菜", "hina"), ("大翔", "hiroto"), ("結衣", "yui"), ("蓮", "ren"), ("さくら", "sakura")],
        [("佐藤", "sato"), ("鈴木", "suzuki"), ("高橋", "takahashi"), ("田中", "tanaka"), ("渡辺", "watanabe")],
        ["東京", "大阪", "京都", "札幌", "福岡"],
        "mail.jp",
    ),
    "FR": (
        [("Françoise", "francoise"), ("Jérôme", "jerome"), ("Hélène", "helene"), ("Loïc", "loic"), ("Anaïs", "anais")],
        [("Lefèvre", "lefevre"), ("Béranger", "beranger"), ("Fontaine", "fontaine"), ("Chevalier", "chevalier"), ("Benoît", "benoit")],
        ["Besançon", "Orléans", "Nîmes", "Périgueux", "Lyon"],
        "orange.fr",
    ),
    "ES": (
        [("Iñaki", "inaki"), ("Begoña", "begona"), ("Ramón", "ramon"), ("Lucía", "lucia")],
        [("Muñoz", "munoz"), ("Ibáñez", "ibanez"), ("Peña", "pena"), ("Gutiérrez", "gutierrez")],
        ["A Coruña", "Málaga", "Cádiz", "León", "Logroño"],
        "correo.es",
    ),
    "GB": (
        [("Emily", "emily"), ("James", "james"), ("Siobhán", "siobhan"), ("Owen", "owen")],
        [("O'Brien", "obrien"), ("Smith", "smith"), ("D'Arcy", "darcy"), ("Llewellyn", "llewellyn")],
        ["London", "Cardiff", "Edinburgh", "Belfast", "Leeds"],
        "example.co.uk",
    ),
}
COUNTRIES = list(PEOPLE)
# Notes as shop staff type them: punctuation, quotes, a line break.
NOTES = [
    "Prefers delivery after 17:00",
    'Gate code "4711", ring twice',
    "Invoice to the company, not the person",
    "Allergic to peanuts – no samples",
    "Asked for a paper catalogue\nSend it in March",
    "VIP since the 2019 fair",
    "Pays by bank transfer only",
    "C:\\Users\\shared\\invoices is where they keep our PDFs",
]
STATUSES = ["pending", "paid", "shipped", "delivered", "cancelled", "refunded"]
CURRENCIES = {"PL": "PLN", "IS": "ISK", "VN": "VND", "DE": "EUR", "PT": "EUR", "TR": "TRY", "GR": "EUR", "JP": "JPY", "FR": "EUR", "ES": "EUR", "GB": "GBP"}

CUSTOMER_COLUMNS = ["id", "name", "email", "city", "country", "signed_up", "credit_limit", "vip", "phone", "note"]
ORDER_COLUMNS = ["id", "customer_id", "ordered_at", "status", "total", "currency", "paid", "shipped_at", "items"]

# One DDL, as far as the engines share it (SQLite takes these type names
# and gives them its own affinities: DECIMAL and BOOLEAN are NUMERIC, so
# SQLite keeps 2500.00 as the integer 2500 and true as 1, as it would for
# any application that used the same schema).
CUSTOMERS_DDL = """CREATE TABLE customers (
  id INTEGER PRIMARY KEY,
  name VARCHAR(80) NOT NULL,
  email VARCHAR(120) NOT NULL,
  city VARCHAR(60) NOT NULL,
  country CHAR(2) NOT NULL,
  signed_up DATE NOT NULL,
  credit_limit DECIMAL(10,2) NOT NULL,
  vip BOOLEAN NOT NULL,
  phone VARCHAR(20),
  note TEXT
)"""
ORDERS_DDL = """CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers(id),
  ordered_at TIMESTAMP NOT NULL,
  status VARCHAR(12) NOT NULL,
  total DECIMAL(12,2) NOT NULL,
  currency CHAR(3) NOT NULL,
  paid BOOLEAN NOT NULL,
  shipped_at TIMESTAMP,
  items INTEGER NOT NULL
)"""


@dataclass(frozen=True)
class Tables:
    customers: list[dict[str, Any]]
    orders: list[dict[str, Any]]


def make() -> Tables:
    rng = random.Random(SEED)
    customers = []
    for i in range(1, CUSTOMERS + 1):
        country = COUNTRIES[rng.randrange(len(COUNTRIES))]
        given, family, cities, domain = PEOPLE[country]
        (g, g_ascii), (f, f_ascii) = rng.choice(given), rng.choice(family)
        # Family name first where the language writes it so.
        name = f"{f} {g}" if country in ("VN", "JP") else f"{g} {f}"
        customers.append({
            "id": i,
            "name": name,
            "email": f"{g_ascii}.{f_ascii}{i}@{domain}",
            "city": rng.choice(cities),
            "country": country,
            "signed_up": date(2019, 1, 1) + timedelta(days=rng.randrange(6 * 365)),
            # Round limits for a third (SQLite then keeps an integer).
            "credit_limit": Decimal(rng.randrange(0, 200) * 10000 if rng.random() < 0.33 else rng.randrange(0, 2_000_000)) / 100,
            "vip": rng.random() < 0.12,
            "phone": None if rng.random() < 0.3 else f"+{rng.randrange(30, 99)} {rng.randrange(100, 999)} {rng.randrange(100000, 999999)}",
            "note": rng.choice(NOTES) if rng.random() < 0.15 else None,
        })  # fmt: skip
    orders = []
    start = datetime(2025, 1, 1, 8, 0, 0)
    for i in range(1, ORDERS + 1):
        customer = customers[rng.randrange(CUSTOMERS)]
        ordered = start + timedelta(seconds=rng.randrange(300 * 24 * 3600))
        status = rng.choice(STATUSES)
        shipped = ordered + timedelta(hours=rng.randrange(4, 96)) if status in ("shipped", "delivered") else None
        orders.append({
            "id": 100000 + i,
            "customer_id": customer["id"],
            "ordered_at": ordered,
            "status": status,
            "total": Decimal(rng.randrange(199, 250000)) / 100,
            "currency": CURRENCIES[customer["country"]],
            "paid": status not in ("pending", "cancelled"),
            "shipped_at": shipped,
            "items": rng.randrange(1, 12),
        })  # fmt: skip
    return Tables(customers, orders)


# --- the forms each engine reads ---------------------------------------------------------


def _sql_literal(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (int, Decimal)):
        return str(v)
    if isinstance(v, datetime):
        return f"'{v.isoformat(sep=' ')}'"
    if isinstance(v, date):
        return f"'{v.isoformat()}'"
    return "'" + str(v).replace("'", "''") + "'"


def _inserts(table: str, columns: list[str], rows: list[dict[str, Any]], batch: int = 500) -> str:
    out = []
    for at in range(0, len(rows), batch):
        values = ",\n".join("(" + ", ".join(_sql_literal(r[c]) for c in columns) + ")" for r in rows[at : at + batch])
        out.append(f"INSERT INTO {table} ({', '.join(columns)}) VALUES\n{values};")
    return "\n".join(out)


def postgres_sql(t: Tables) -> str:
    """The schema and the rows, for `psql -f` (one transaction)."""
    return "\n".join([
        "BEGIN;",
        CUSTOMERS_DDL + ";",
        ORDERS_DDL + ";",
        "CREATE INDEX orders_customer ON orders (customer_id);",
        _inserts("customers", CUSTOMER_COLUMNS, t.customers),
        _inserts("orders", ORDER_COLUMNS, t.orders),
        "COMMIT;",
        "ANALYZE;",
    ])  # fmt: skip


def _sqlite_value(v: Any) -> Any:
    # Python's sqlite3 stores what an application would pass it: Decimal as
    # its text, which the DECIMAL column's NUMERIC affinity turns into a
    # number; dates as ISO text.
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, date):
        return v.isoformat()
    return v


def write_sqlite(t: Tables, path: Path) -> None:
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        db.execute(CUSTOMERS_DDL)
        db.execute(ORDERS_DDL)
        db.execute("CREATE INDEX orders_customer ON orders (customer_id)")
        for table, columns, rows in (("customers", CUSTOMER_COLUMNS, t.customers), ("orders", ORDER_COLUMNS, t.orders)):
            marks = ", ".join("?" for _ in columns)
            db.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", [[_sqlite_value(r[c]) for c in columns] for r in rows])
    # sqlite3's context manager commits but does not close.
    sqlite3.connect(path).close()


def _csv_value(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime):
        return v.isoformat(sep=" ")
    return str(v)


def write_csv(t: Tables, folder: Path) -> dict[str, Path]:
    """customers.csv and orders.csv (RFC 4180, a header line; NULL is an
    empty field)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for table, columns, rows in (("customers", CUSTOMER_COLUMNS, t.customers), ("orders", ORDER_COLUMNS, t.orders)):
        path = folder / f"{table}.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(columns)
            w.writerows([_csv_value(r[c]) for c in columns] for r in rows)
        out[table] = path
    return out


XLSX_WRITER = """
import csv, sys
from datetime import date, datetime
from decimal import Decimal
from openpyxl import Workbook
src, out = sys.argv[1], sys.argv[2]
wb = Workbook()
wb.remove(wb.active)
kinds = {
    "customers": {"id": int, "signed_up": date.fromisoformat, "credit_limit": float, "vip": lambda s: s == "true"},
    "orders": {"id": int, "customer_id": int, "ordered_at": datetime.fromisoformat, "total": float,
               "paid": lambda s: s == "true", "shipped_at": datetime.fromisoformat, "items": int},
}
for table in ("customers", "orders"):
    ws = wb.create_sheet(table)
    with open(f"{src}/{table}.csv", newline="", encoding="utf-8") as f:
        rows = csv.reader(f)
        header = next(rows)
        ws.append(header)
        for row in rows:
            ws.append([None if v == "" else kinds[table].get(c, str)(v) for c, v in zip(header, row)])
# A fixed creation time keeps the file's bytes the same from run to run.
wb.properties.created = wb.properties.modified = datetime(2026, 1, 1)
wb.save(out)
"""


def write_xlsx(t: Tables, path: Path, python: Path) -> None:
    """The workbook (sheets `customers` and `orders`, a header row each;
    numbers, dates, booleans, empty cells for NULL), written by openpyxl run
    with `python` (the servers' environment, which has it)."""
    folder = path.parent / "xlsx-src"
    write_csv(t, folder)
    r = subprocess.run([str(python), "-c", XLSX_WRITER, str(folder), str(path)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"writing {path} failed: {r.stderr[-2000:]}")


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    tables = make()
    (out / "shop.sql").write_text(postgres_sql(tables))
    write_sqlite(tables, out / "shop.sqlite")
    write_csv(tables, out / "csv")
    write_xlsx(tables, out / "shop.xlsx", Path(__file__).resolve().parents[2] / ".venv-servers" / "bin" / "python")
    print(f"wrote {out}")
