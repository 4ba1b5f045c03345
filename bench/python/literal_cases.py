"""Cases for the Python-literal reader (crates/core/src/json/python.rs), judged by the
CPython that runs this script: tests/python_literal.rs compares the Rust
reader with every verdict.

Each case is one JSON line `{"text": ..., "json": ..., "tuples": ...}`:
`text` is a candidate literal; `json` is what the reader must write for it
(compact JSON, as a JSON string), or null when it must refuse the text.
The reader must read `text` exactly when

- `ast.literal_eval(text)` gives a list, tuple or dict of str, int, float,
  bool and None, nested, with str keys only and no surrogate code point
  in any string (JSON could not carry the value one to one);
- `repr` of that value is `text`, byte for byte (nothing lost);
- `json.loads(text)` fails (else the text is JSON's to read).

The candidates: `repr` of random values (strings from every part of
Unicode, escapes, both quotes; ints up to 400 digits; doubles from random
bits, edge values and ties between two shortest spellings; nesting; tuples
of one item; non-str keys), then
each mutated a few ways (spacing, quotes, hex case, a character inserted,
deleted or replaced, `inf`/`nan`): CPython decides every one.

Run: .venv/bin/python bench/python/literal_cases.py [--seed N] [--count N]
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import random
import struct
import sys
import warnings

# Characters a string draws from, by kind.
ASCII = [chr(c) for c in range(0x20, 0x7F)]
SPECIAL = ["'", '"', "\\", "\n", "\t", "\r", "\x00", "\x07", "\x1b", "\x7f", "\x85", "\xa0", "\xad", " "]
LATIN = [chr(c) for c in range(0xA0, 0x250)]
FORMAT = ["\u200b", "\u200d", "\u2028", "\u2029", "\ufeff", "\u202e", "\u2066", "\u00ad", "\u061c", "\ue000", "\uffff", "\U000e0001", "\U000f0000"]
SCRIPTS = list("żółćęśąźńŁŚÓÞðæøåÆØÅđươạảấầẩẫậăắằẳẵặ中文日本語한국어ぁアΩλДжЯשלוםمرحبا")
ASTRAL = ["😀", "𝔘", "🇵🇱", "👩\u200d💻", "\U00020000", "\U0001fbf9", "\U00031350"]
SURROGATE = ["\ud800", "\udfff", "\ud83d\ude00"]


def rand_str(rng: random.Random) -> str:
    n = rng.choice([0, 1, 2, 5, 12, 30])
    pools = [ASCII] * 6 + [SPECIAL, LATIN, FORMAT, SCRIPTS, ASTRAL]
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.01:
            out.append(rng.choice(SURROGATE))
        elif r < 0.05:
            out.append(chr(rng.randrange(0x110000)).encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass"))
        else:
            out.append(rng.choice(rng.choice(pools)))
    return "".join(out)


def rand_float(rng: random.Random) -> float:
    r = rng.random()
    if r < 0.3:
        return struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
    if r < 0.5:
        return rng.choice([0.0, -0.0, 0.1, 0.5, 1.0, 1e16, 1e15, 9999999999999998.0, 1e-4, 1e-5, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 123456789.123, 1 / 3, 2 / 3, 100.0, 1e22, 1e23, float("inf"), float("nan")])
    if r < 0.6:
        # Halfway between two shortest spellings (CPython takes the even
        # last digit): 700000200000078.25 is 700000200000078.2.
        return rng.choice([1, -1]) * (rng.randrange(2**49, 2**50) + rng.choice([0.25, 0.75]))
    if r < 0.8:
        return round(rng.uniform(-1000, 1000), rng.randrange(0, 6))
    return rng.uniform(-1, 1) * 10 ** rng.randrange(-30, 30)


def rand_int(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.6:
        return rng.randrange(-1000, 100000)
    if r < 0.9:
        return rng.randrange(-(2**70), 2**70)
    return rng.randrange(10 ** rng.randrange(20, 400))


def rand_scalar(rng: random.Random):
    return rng.choice([rand_str, rand_str, rand_str, rand_int, rand_float, lambda r: r.choice([True, False, None])])(rng)


def rand_key(rng: random.Random):
    r = rng.random()
    if r < 0.9:
        return rand_str(rng)
    return rng.choice([1, -2, 1.5, None, True, False, (1, "a")])


def rand_value(rng: random.Random, depth: int):
    r = rng.random()
    if depth > 3 or r < 0.45:
        return rand_scalar(rng)
    n = rng.choice([0, 1, 1, 2, 3, 5])
    kind = rng.random()
    if kind < 0.4:
        return [rand_value(rng, depth + 1) for _ in range(n)]
    if kind < 0.6:
        return tuple(rand_value(rng, depth + 1) for _ in range(n))
    d = {}
    for _ in range(n):
        try:
            d[rand_key(rng)] = rand_value(rng, depth + 1)
        except TypeError:
            pass
    return d


def rand_top(rng: random.Random):
    r = rng.random()
    if r < 0.3:
        # Rows, as str(rows) of a database result.
        keys = [rand_str(rng) or "k" for _ in range(rng.randrange(1, 5))]
        return [{k: rand_scalar(rng) for k in keys} for _ in range(rng.randrange(0, 4))]
    while True:
        v = rand_value(rng, 0)
        if isinstance(v, (list, tuple, dict)):
            return v


def mutations(text: str, rng: random.Random) -> list[str]:
    out = [
        text.replace(", ", ",", 1),
        text.replace(": ", ":", 1),
        text + " ",
        text + "\n",
        " " + text,
        text.replace("'", '"', 2),
        text.replace('"', "'", 2),
        text.replace("True", "true", 1),
        text.replace("None", "null", 1),
        text.replace("e+", "e", 1),
        text.replace("e-0", "e-", 1),
        text.replace(".0", ".00", 1),
        text.replace(",)", ")", 1),
        text.replace("\\x", "\\X", 1),
        text.replace("\\u", "\\U0000", 1),
        text.replace("\\x", "\\u00", 1),
        text.replace("0", "-0", 1),
        text.replace("1", "inf", 1),
    ]
    for _ in range(4):
        i = rng.randrange(len(text) + 1)
        c = rng.choice(["'", '"', "\\", " ", ",", "(", ")", "[", "]", "{", "}", ":", "e", "0", "x", "u", ".", "-", "é", "\x00"])
        r = rng.random()
        if r < 0.33:
            out.append(text[:i] + c + text[i:])
        elif r < 0.66:
            out.append(text[:i] + text[i + 1 :])
        else:
            out.append(text[:i] + c + text[i + 1 :])
    # Hex digits in upper case.
    if "\\x" in text or "\\u" in text:
        out.append(text.upper())
    return [m for m in out if m != text]


def allowed(v, depth: int = 0) -> bool:
    if depth > 100:
        return False
    if isinstance(v, bool) or v is None or isinstance(v, int):
        return True
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, str):
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in v)
    if isinstance(v, (list, tuple)):
        return all(allowed(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and allowed(k) and allowed(x, depth + 1) for k, x in v.items())
    return False


def has_tuple(v) -> bool:
    if isinstance(v, tuple):
        return True
    if isinstance(v, list):
        return any(has_tuple(x) for x in v)
    if isinstance(v, dict):
        return any(has_tuple(x) for x in v.values())
    return False


def verdict(text: str) -> dict:
    """What the reader must do with `text`."""
    refuse = {"text": text, "json": None, "tuples": False}
    try:
        v = ast.literal_eval(text)
    except Exception:
        return refuse
    if not isinstance(v, (list, tuple, dict)) or not allowed(v):
        return refuse
    try:
        if repr(v) != text:
            return refuse
    except ValueError:
        # An int past the digit limit of str(): no repr to compare with.
        return refuse
    try:
        json.loads(text)
        return refuse
    except ValueError:
        pass
    return {"text": text, "json": json.dumps(v, ensure_ascii=False, separators=(",", ":")), "tuples": has_tuple(v)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=2000)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    # Mutations make texts such as `1e` that warn while they fail.
    warnings.simplefilter("ignore")
    sys.set_int_max_str_digits(0) if hasattr(sys, "set_int_max_str_digits") else None
    out = sys.stdout
    for _ in range(args.count):
        text = repr(rand_top(rng))
        for t in [text] + mutations(text, rng):
            if any(0xD800 <= ord(c) <= 0xDFFF for c in t):
                # No Rust `str` holds it, nor any UTF-8 body.
                continue
            try:
                line = json.dumps(verdict(t), ensure_ascii=True)
            except ValueError:
                continue
            out.write(line + "\n")


if __name__ == "__main__":
    main()
