//! The TOON spelling of a JSON number literal, and whether TOON carries it
//! exactly.
//!
//! The rule both paths share is [`crate::stage::toon::number::exact_form`].
//! [`canonical`] gives its answer, through the same computation, except for
//! two shapes whose answer is known without arithmetic:
//! - an integer literal of at most 18 digits other than `-0` fits an `i64`,
//!   and `i64` formatting gives back the literal (JSON forbids leading
//!   zeros);
//! - a plain decimal `int.frac` with at most 15 significant digits: every
//!   such decimal is the shortest spelling of its nearest `f64` (15 digits
//!   is `f64`'s guaranteed decimal precision, so no shorter decimal maps to
//!   the same double), Rust's `f64` display writes that shortest spelling
//!   without an exponent, and `format_canonical_number` then drops trailing
//!   zeros and an empty fraction. So the canonical form is the literal with
//!   its fraction's trailing zeros (and a bare point) removed.
//!
//! Both shortcuts are checked against the generic computation by the tests.

use std::borrow::Cow;

use crate::stage::toon::number::exact_form as generic;

/// The canonical TOON form of `raw` when it has exactly `raw`'s decimal
/// value; `None` when TOON cannot carry the number (the block is then
/// refused as lossy).
pub(super) fn canonical(raw: &str) -> Option<Cow<'_, str>> {
    match shortcut(raw) {
        Shortcut::Same => Some(Cow::Borrowed(raw)),
        Shortcut::Trimmed(s) => Some(Cow::Borrowed(s)),
        Shortcut::Lossy => None,
        Shortcut::No => generic(raw).map(Cow::Owned),
    }
}

enum Shortcut<'a> {
    Same,
    Trimmed(&'a str),
    Lossy,
    No,
}

fn shortcut(raw: &str) -> Shortcut<'_> {
    let bytes = raw.as_bytes();
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    let Some(dot) = digits.iter().position(|&b| !b.is_ascii_digit()) else {
        // An integer literal.
        return if raw == "-0" {
            Shortcut::Lossy
        } else if digits.len() <= 18 {
            Shortcut::Same
        } else {
            Shortcut::No
        };
    };
    let (int, rest) = digits.split_at(dot);
    let Some(frac) = rest.strip_prefix(b".") else {
        return Shortcut::No;
    };
    if frac.is_empty() || !frac.iter().all(u8::is_ascii_digit) {
        return Shortcut::No;
    }
    let kept = frac.iter().rposition(|&b| b != b'0').map_or(0, |i| i + 1);
    // Significant digits: from the first non-zero digit to the last one.
    let int_sig = int.iter().position(|&b| b != b'0').map(|i| int.len() - i);
    let (significant, leading_zeros) = match int_sig {
        Some(n) => (n + kept, 0),
        None => {
            let zeros = frac.iter().take_while(|&&b| b == b'0').count();
            (kept.saturating_sub(zeros), zeros)
        }
    };
    // Far below 1 the doubles thin out (subnormals start near 1e-308), so
    // the 15-digit argument only holds well above that.
    if significant > 15 || leading_zeros > 290 {
        return Shortcut::No;
    }
    // Drop the fraction's trailing zeros, and the point when none is left.
    let cut = raw.len() - (frac.len() - kept) - usize::from(kept == 0);
    match raw.get(..cut) {
        Some("-0") => Shortcut::Lossy,
        Some(s) if s.len() == raw.len() => Shortcut::Same,
        Some(s) => Shortcut::Trimmed(s),
        None => Shortcut::No,
    }
}

/// `n` generated JSON number literals (RFC 8259 §6), zeros and long digit
/// runs made likely, from `seed`: for the tests of each reading of a
/// number.
#[cfg(test)]
pub(super) fn generated_literals(seed: u8, n: usize) -> Vec<String> {
    use proptest::prelude::Rng;
    use proptest::test_runner::{RngAlgorithm, TestRng};

    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]);
    let mut next = |n: u64| rng.next_u64() % n;
    let digits = |len: u64, next: &mut dyn FnMut(u64) -> u64| -> String {
        (0..len)
            .map(|_| match next(3) {
                0 => '0',
                _ => char::from(b'0' + next(10) as u8),
            })
            .collect()
    };
    (0..n)
        .map(|_| {
            let mut raw = String::new();
            if next(3) == 0 {
                raw.push('-');
            }
            let int = digits(1 + next(20), &mut next);
            let int = int.trim_start_matches('0');
            raw.push_str(if int.is_empty() { "0" } else { int });
            if next(4) != 0 {
                raw.push('.');
                raw.push_str(&digits(1 + next(20), &mut next));
            }
            if next(8) == 0 {
                raw.push_str(&format!("e{}", next(40) as i64 - 20));
            }
            raw
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortcuts_agree_with_the_generic_computation() {
        let cases = [
            "0",
            "-0",
            "7",
            "-7",
            "123456789012345678",
            "-123456789012345678",
            "1234567890123456789",
            "18446744073709551615",
            "18446744073709551616",
            "0.0",
            "-0.0",
            "-0.000",
            "1.0",
            "1.50",
            "-1.50",
            "0.001",
            "0.000000000000000000001",
            "123456789012345.0",
            "1234567890.12345",
            "1234567890.123456",
            "0.1000000000000000055511151231257827",
            "100000000000000000000.5",
            "1e5",
            "1E+5",
            "1.5e-3",
            "1e400",
            "-1e400",
            "9007199254740993",
            "3.141592653589793",
            "0.30000000000000004",
            "10.000000",
            // Found by fuzzing (toon_stage): Display and ryu spell this double
            // differently, so TOON cannot promise its literal to every reader.
            "7000002000000783e-1",
            "700000200000078.3",
            "0.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000123456789012345",
        ];
        for raw in cases {
            assert_eq!(canonical(raw).map(Cow::into_owned), generic(raw), "{raw}");
        }
    }

    /// Generated JSON number literals: the shortcuts against the
    /// computation.
    #[test]
    fn shortcuts_agree_on_generated_literals() {
        for raw in generated_literals(13, 50_000) {
            assert_eq!(canonical(&raw).map(Cow::into_owned), generic(&raw), "{raw}");
        }
    }
}
