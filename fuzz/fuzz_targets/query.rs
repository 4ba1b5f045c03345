//! An agent's JMESPath query on a JSON result (issue 37): arbitrary query
//! text, then a NUL, then the result — taken as it is when it is JSON,
//! else generated from its bytes. Parsed as traffic is (the static bound
//! may refuse it), then evaluated past the bound (`parse_unbounded`) so
//! that the meter meets what the bound would refuse. Never a panic;
//! never more work or memory than the budget; and where the evaluation
//! finished within it, the crate's own interpreter's answer (but where the
//! crate itself panics: slices near 2^31, sorting numbers beyond f64).
//! Run with a libFuzzer `-timeout` and `-rss_limit_mb` (fuzz/run.sh): a
//! query that runs long or grows the process is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_toon::config::QueryBudget;
use mcp_toon::outcome::Reason;
use mcp_toon::stage::project::Query;

/// A smaller floor than the default, so that an input that spends all of
/// its budget still leaves the fuzzer its speed; the per-byte shares are
/// the defaults'.
const BUDGET: QueryBudget = QueryBudget {
    work_per_byte: 4,
    work_floor: 1 << 14,
    memory_per_byte: 4,
    memory_floor: 1 << 16,
};

/// JSON from bytes: objects over a few keys, arrays, strings with quotes,
/// backslashes and control characters, numbers of every spelling.
fn generate(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut it = bytes.iter().copied();
    value(&mut it, &mut out, 0);
    out
}

fn value(it: &mut impl Iterator<Item = u8>, out: &mut String, depth: usize) {
    let b = it.next().unwrap_or(0);
    match (b % 8, depth < 6) {
        (0, true) | (1, true) => {
            out.push('[');
            for i in 0..(b / 8) % 6 {
                if i > 0 {
                    out.push(',');
                }
                value(it, out, depth + 1);
            }
            out.push(']');
        }
        (2, true) | (3, true) => {
            out.push('{');
            for i in 0..(b / 8) % 6 {
                if i > 0 {
                    out.push(',');
                }
                let key = ["a", "b", "name", "n", "x\\\"y"][usize::from(it.next().unwrap_or(0) % 5)];
                out.push_str(&format!("\"{key}{i}\":"));
                value(it, out, depth + 1);
            }
            out.push('}');
        }
        (4, _) => out.push_str(
            ["0", "-1", "2.50", "1e400", "-0", "12345678901234567890123", "7e-3", "42"]
                [usize::from(b / 8 % 8)],
        ),
        (5, _) => out.push_str(
            ["\"\"", "\"x\"", "\"a\\\"b\\\\c\"", "\"\\u0001\\n\"", "\"ümlaut\"", "\"1e400\"", "\"12\"", "\"b\""]
                [usize::from(b / 8 % 8)],
        ),
        (6, _) => out.push_str(["true", "false", "null"][usize::from(b / 8 % 3)]),
        _ => out.push_str(&format!("{}", b / 8)),
    }
}

/// The crate's interpreter panics on these (a trapped VM, were it in the
/// plugin): a slice step or end near 2^31 overflows its `i32` index, and
/// its order of numbers beyond f64 is no total order, on which Rust's sort
/// panics.
fn crate_may_panic(query: &str) -> bool {
    query.contains("sort")
        || query
            .split(|c: char| !c.is_ascii_digit())
            .any(|digits| digits.len() >= 7)
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else { return };
    let (query, rest) = input.split_once('\0').unwrap_or((input, ""));
    let text = if serde_json::from_str::<serde_json::Value>(rest).is_ok() {
        rest.to_string()
    } else {
        generate(rest.as_bytes())
    };
    // As traffic meets it: parsed and bounded, then run within the budget.
    if let Ok(q) = Query::parse(query, 4096) {
        let _ = q.apply_within(&text, &BUDGET);
    }
    let Ok(q) = Query::parse_unbounded(query, 4096) else { return };
    let (ours, spent) = q.run(&text, &BUDGET);
    assert!(spent.work <= BUDGET.work(text.len()), "work {spent:?}");
    assert!(spent.memory <= BUDGET.memory(text.len()), "memory {spent:?}");
    if let Ok(out) = &ours {
        assert!(out.len() < text.len(), "an answer is smaller than the result");
    }
    if matches!(&ours, Err(r) if r.reason == Reason::QueryBudget) || crate_may_panic(query) {
        return;
    }
    let theirs = q.reference(&text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{query}"),
        (Err(a), Err(b)) => assert_eq!(a.reason, b.reason, "{query}: {a:?} {b:?}"),
        _ => panic!("{query}: ours {ours:?}, the crate's {theirs:?}"),
    }
});
