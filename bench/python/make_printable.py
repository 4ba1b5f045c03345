"""Writes crates/core/src/json/printable.rs: the characters Python's `str.isprintable`
calls not printable, as the boundaries of their ranges, from the Unicode
database of the Python that runs it (`unicodedata.unidata_version`).

`repr` of a `str` writes a character as itself when it is printable and
escapes it (`\\xhh`, `\\uhhhh`, `\\Uhhhhhhhh`) when it is not (CPython
`unicode_repr`, Objects/unicodeobject.c; `Py_UNICODE_ISPRINTABLE`: every
character but those of categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs, the
space excepted). The Python-literal reader (crates/core/src/json/python.rs) checks a
literal's spelling against this table, and compact JSON (crates/core/src/stage/clean/
compact.rs) writes a `\\uXXXX` escape as its character only for a
printable one. Deterministic; the file is committed, and
tests/python_literal.rs checks every code point against the Python in
.venv. Rerun after moving to another Python:

Run: .venv/bin/python bench/python/make_printable.py
"""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "crates" / "core" / "src" / "json" / "printable.rs"


def ranges() -> list[tuple[int, int]]:
    out = []
    start = None
    for cp in range(0x110000):
        printable = chr(cp).isprintable()
        if not printable and start is None:
            start = cp
        elif printable and start is not None:
            out.append((start, cp))
            start = None
    if start is not None:
        out.append((start, 0x110000))
    return out


def rows(values: list[int], width: int) -> str:
    per = 12 if width == 4 else 8
    lines = []
    for i in range(0, len(values), per):
        lines.append("    " + " ".join(f"0x{v:0{width}x}," for v in values[i : i + per]))
    return "\n".join(lines)


def main() -> None:
    bmp: list[int] = []
    astral: list[int] = []
    for start, end in ranges():
        # Ranges do not cross U+10000: U+FFFE..U+FFFF are noncharacters,
        # U+10000 is a letter (Linear B).
        assert (start < 0x10000) == (end <= 0x10000), (start, end)
        if start < 0x10000:
            bmp.append(start)
            if end < 0x10000:
                bmp.append(end)
        else:
            astral.append(start)
            if end < 0x110000:
                astral.append(end)
    version = unicodedata.unidata_version
    text = f"""//! Which characters Python's `str.isprintable` calls printable (Unicode
//! {version}, the database of Python {sys.version_info.major}.{sys.version_info.minor}): written by
//! `bench/python/make_printable.py`, checked against that Python for
//! every code point by `tests/python_literal.rs`. Do not edit by hand.
//!
//! Each table lists where printability changes, in order: a character
//! is not printable when an odd number of entries is at or below it.
//! Not printable: categories Cc, Cf, Cs, Co, Cn, Zl, Zp, and Zs but the
//! space (CPython `Py_UNICODE_ISPRINTABLE`).

/// The Unicode version of the tables.
pub const UNICODE_VERSION: &str = "{version}";

/// Boundaries below U+10000 (an odd count up to U+FFFF: not printable).
#[rustfmt::skip]
const BMP: [u16; {len(bmp)}] = [
{rows(bmp, 4)}
];

/// Boundaries from U+10000 on.
#[rustfmt::skip]
const ASTRAL: [u32; {len(astral)}] = [
{rows(astral, 6)}
];

/// Whether Python's `repr` writes `c` as itself (`str.isprintable`).
pub fn is_printable(c: char) -> bool {{
    let cp = u32::from(c);
    let at = match u16::try_from(cp) {{
        Ok(unit) => BMP.partition_point(|&b| b <= unit),
        Err(_) => ASTRAL.partition_point(|&b| b <= cp),
    }};
    at % 2 == 0
}}
"""
    OUT.write_text(text)
    print(f"{OUT}: {len(bmp)} + {len(astral)} boundaries (Unicode {version})")


if __name__ == "__main__":
    main()
