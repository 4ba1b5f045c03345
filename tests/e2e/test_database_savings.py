"""Issue 39's "Done when", on the database tier's calls (tests/e2e/
databases.py; the same run test_databases.py checks for safety): through
Envoy at the default configuration `{}`, the o200k_base tokens of every
text item the client reads, with the plugin against without it (counted by
`mcp-toon measure`).

- All 56 calls of the five servers, the whole-table results of about
  1 MB included: at least 25 % fewer tokens (today 2.0 %; the best lossless
  rewrite of every item: 42.8 %).
- Each server's 500-row select (`SELECT * FROM orders ORDER BY id LIMIT
  500`): at least 55 % fewer tokens than the server's text — or, where no
  lossless rewrite of that server's answer gets to 55 %, within 5 points of
  the best one. The 55 % came from the issue's own run, where it was the
  best rewrite less 5 points; on this data the best lossless rewrites save
  57.1 % (dbhub), 54.7 % (server-postgres), 49.3 % (sqlite's Python
  literal), 36.2 % (motherduck: rows as arrays, indented) and 0 % (excel:
  already compact arrays), so the rule asks 55 %, 49.7 %, 44.3 %, 31.2 %
  and "never more" of them; the test prints what it measured.

These fail on the code before issue 39's features (results over
`max_body_bytes` examined, tables below an envelope, Python literals read
as data, non-ASCII written as UTF-8); they pass when those land.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import databases

TOTAL_SAVED = 0.25
SELECT_500_SAVED = 0.55
MARGIN = 0.05


@pytest.fixture(scope="module")
def measured(work_dir: Path) -> list[databases.Measured]:
    absent = databases.missing()
    assert not absent, f"missing {', '.join(map(str, absent))}: run scripts/bootstrap.sh"
    run = databases.exchanged(work_dir / "databases")
    return databases.measured(run.calls, work_dir / "databases-tokens")


def saved(before: int, after: int) -> float:
    return (before - after) / before if before else 0.0


def test_total_tokens_fall_by_a_quarter(measured):
    before, after = sum(m.tokens[0] for m in measured), sum(m.tokens[1] for m in measured)
    best = sum(m.best for m in measured)
    print(f"all {len(measured)} calls: {before:,} -> {after:,} tokens ({saved(before, after):.1%}); best lossless {best:,} ({saved(before, best):.1%})")
    assert len({m.exchange.server for m in measured}) == len(databases.SERVERS)
    assert saved(before, after) >= TOTAL_SAVED, f"{before:,} -> {after:,} tokens: {saved(before, after):.1%} saved, want {TOTAL_SAVED:.0%}"


@pytest.mark.parametrize("server", databases.SERVERS)
def test_a_500_row_select_saves_55_percent(measured, server):
    (m,) = [m for m in measured if m.exchange.server == server and m.exchange.kind == "select 500"]
    (before, after), best = m.tokens, m.best
    want = min(SELECT_500_SAVED, saved(before, best) - MARGIN)
    print(f"{server} select 500: {before:,} -> {after:,} tokens ({saved(before, after):.1%}); best lossless {best:,} ({saved(before, best):.1%}); want {want:.1%}")
    assert saved(before, after) >= want, f"{server}: {before:,} -> {after:,} tokens, {saved(before, after):.1%} saved, want {want:.1%} (best lossless {saved(before, best):.1%})"
