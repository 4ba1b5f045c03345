//! Exact decimal values of JSON number literals.
//!
//! Written by hand because the comparison must be exact for any literal the
//! RFC 8259 §6 grammar allows (`-? int frac? exp?`), including integers far
//! beyond 2^64 and exponents no float can hold, and no small crate offers
//! that without pulling in a bignum library.

/// A JSON number as sign, significant digits and a power-of-ten exponent:
/// the value is `(-1)^negative × 0.digits × 10^exponent`. Zero has no digits
/// but keeps its sign, since `-0` and `0` are different JSON texts that some
/// decoders (JavaScript among them) keep apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    exponent: i64,
}

impl Decimal {
    /// Parses an RFC 8259 number literal; `None` when the text is not one
    /// or its exponent does not fit in an `i64`.
    pub(crate) fn parse(text: &str) -> Option<Decimal> {
        let bytes = text.as_bytes();
        let mut i = 0;
        let negative = bytes.first() == Some(&b'-');
        if negative {
            i += 1;
        }
        let int_start = i;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let int_part = bytes.get(int_start..i)?;
        if int_part.is_empty() || (int_part.len() > 1 && int_part.first() == Some(&b'0')) {
            return None;
        }
        let mut frac_part: &[u8] = &[];
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            frac_part = bytes.get(start..i)?;
            if frac_part.is_empty() {
                return None;
            }
        }
        let mut exp: i64 = 0;
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            let exp_negative = match bytes.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let start = i;
            while let Some(d) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
                exp = exp.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
                i += 1;
            }
            if i == start {
                return None;
            }
            if exp_negative {
                exp = -exp;
            }
        }
        if i != bytes.len() {
            return None;
        }
        // 0.digits × 10^exponent: the integer part's length moves the point.
        let mut digits: Vec<u8> = int_part.iter().chain(frac_part).map(|d| d - b'0').collect();
        let int_len = i64::try_from(int_part.len()).ok()?;
        let mut exponent = exp.checked_add(int_len)?;
        let leading = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..leading);
        exponent = exponent.checked_sub(i64::try_from(leading).ok()?)?;
        while digits.last() == Some(&0) {
            digits.pop();
        }
        if digits.is_empty() {
            exponent = 0;
        }
        Some(Decimal {
            negative,
            digits,
            exponent,
        })
    }
}
