//! `strip_base64`: binary blobs encoded as text cost many tokens and tell a
//! model nothing. A blob becomes `<stripped: N bytes>`, N its decoded size.
//!
//! The detector is written here rather than taken from a crate: base64
//! crates decode a string already known to be base64; none finds blobs in
//! prose and tells them from words, digests, ids and tokens, which is the
//! whole job.
//!
//! What is stripped (RFC 4648 §4 standard and §5 URL-safe alphabets):
//! - a `data:` URI whose parameters end in `;base64` (RFC 2397) and whose
//!   payload has at least `min_chars` characters — the whole URI goes, its
//!   label says what it is;
//! - a bare run of at least `min_chars` alphabet characters (padding `=`
//!   not counted) that looks like encoded bytes rather than text:
//!   - one alphabet only (a run with both `+`/`/` and `-`/`_` is not
//!     base64);
//!   - upper case, lower case and digits all present. Hex (`0-9a-f`, or
//!     upper-case) never has all three, so a digest or a hex dump of any
//!     length stays: it is base16, not base64, and a hex string is more
//!     often an identifier an agent must quote back than a blob;
//!   - at least 4.5 bits of entropy per character (the Shannon entropy of
//!     the run's character counts): encoded bytes spread over the 64
//!     symbols (random data about 5.8 bits, encoded ASCII text or JSON about
//!     5), words and identifiers do not (English without spaces about 4.5,
//!     `camelCase` names 4.2–4.7, hex at most 4);
//!   - the character class (upper, lower, digit, symbol) changes at least
//!     every two and a half characters on average: random base64 changes
//!     about two times in three, encoded text more than one in two, while
//!     in `CamelCase` words each capital is followed by a run of lower case;
//!   - a length base64 can have: `len % 4 != 1`, and padding only where it
//!     completes a multiple of four;
//! - line-wrapped base64 (MIME's 76 and PEM's 64 columns, RFC 2045 §6.8):
//!   consecutive lines that are nothing but alphabet characters, all as long
//!   as the first (at least 16 and a multiple of four), count as one run,
//!   with a shorter last line when it ends in padding (without padding a
//!   short last line could as well be a word, and it stays).
//!
//! What is never stripped, whatever its length:
//! - a run inside a URL (the whitespace-delimited word before it contains
//!   `://`): presigned links and content ids must stay usable;
//! - a run joined to another by a dot (`aaa.bbb.ccc`): JWTs and other
//!   dotted tokens are credentials or handles an agent passes back;
//! - (JSON only) a string value whose key names a handle — it contains
//!   `token`, `cursor`, `continuation` or `etag`: pagination cursors are
//!   often long base64 and must be echoed back verbatim.
//! - a run whose placeholder would not be shorter than it.

use std::fmt::Write as _;

/// Words in a JSON key that mark its value as a handle to pass back.
const HANDLE_KEY_WORDS: &[&str] = &["token", "cursor", "continuation", "etag"];

/// How far back (bytes) a run looks for the `://` of a URL it sits in.
const URL_LOOKBACK: usize = 2048;

/// Narrowest line of wrapped base64 that is followed across line breaks.
const MIN_WRAP_WIDTH: usize = 16;

/// Whether a JSON member with this key holds a handle (see module docs).
pub(crate) fn is_handle_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    HANDLE_KEY_WORDS.iter().any(|w| key.contains(w))
}

/// Replaces blobs of at least `min_chars` characters; `None` when there is
/// none.
pub(crate) fn strip(text: &str, min_chars: usize) -> Option<String> {
    let b = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0; // bytes of `text` already handled
    let mut wrapped = Wrapped::default();
    let mut i = 0;
    while i < b.len() {
        let at = |k: usize| b.get(k).copied().unwrap_or(0);
        if at(i).eq_ignore_ascii_case(&b'd') && (i == 0 || !at(i - 1).is_ascii_alphanumeric()) {
            if let Some((end, decoded)) = data_uri(b, i, min_chars) {
                if replace(text, &mut out, &mut copied, i, end, decoded) {
                    i = end;
                    continue;
                }
            }
        }
        if !is_alphabet(at(i)) {
            i += 1;
            continue;
        }
        let run = scan_run(b, i);
        if let Some(blob) = blob_at(b, run, min_chars, &mut wrapped) {
            if replace(text, &mut out, &mut copied, i, blob.end, blob.decoded) {
                i = blob.end;
                continue;
            }
        }
        i = run.end_with_padding();
    }
    if copied == 0 {
        return None;
    }
    out.push_str(text.get(copied..).unwrap_or(""));
    Some(out)
}

/// Appends `text[copied..start]` and the placeholder for `start..end` when
/// the placeholder is shorter than what it replaces.
fn replace(
    text: &str,
    out: &mut String,
    copied: &mut usize,
    start: usize,
    end: usize,
    decoded: usize,
) -> bool {
    let placeholder = placeholder(decoded);
    if placeholder.len() >= end.saturating_sub(start) {
        return false;
    }
    let (Some(before), true) = (text.get(*copied..start), text.is_char_boundary(end)) else {
        return false;
    };
    out.push_str(before);
    out.push_str(&placeholder);
    *copied = end;
    true
}

fn placeholder(decoded: usize) -> String {
    let mut s = String::with_capacity(24);
    let _ = write!(s, "<stripped: {decoded} bytes>");
    s
}

fn is_alphabet(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_')
}

/// Decoded size of `chars` base64 characters, padding excluded.
fn decoded_len(chars: usize) -> usize {
    chars / 4 * 3 + (chars % 4) * 3 / 4
}

/// A maximal run of alphabet characters and the padding after it.
#[derive(Clone, Copy)]
struct Run {
    start: usize,
    end: usize,
    pad: usize,
}

impl Run {
    fn len(self) -> usize {
        self.end - self.start
    }
    fn end_with_padding(self) -> usize {
        self.end + self.pad
    }
}

fn scan_run(b: &[u8], start: usize) -> Run {
    let mut end = start;
    while b.get(end).copied().is_some_and(is_alphabet) {
        end += 1;
    }
    let pad = b
        .get(end..)
        .unwrap_or(&[])
        .iter()
        .take(2)
        .take_while(|&&c| c == b'=')
        .count();
    Run { start, end, pad }
}

/// Least entropy, in bits per character, of a run taken for encoded bytes.
const MIN_ENTROPY_BITS: f64 = 4.5;

/// What the statistics of a run (or of wrapped lines) say.
struct Stats {
    counts: [u32; 128],
    chars: usize,
    upper: bool,
    lower: bool,
    digit: bool,
    standard: bool,
    url_safe: bool,
    changes: usize,
    /// Class of the first and the last character fed.
    first: Option<u8>,
    last: Option<u8>,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            counts: [0; 128],
            chars: 0,
            upper: false,
            lower: false,
            digit: false,
            standard: false,
            url_safe: false,
            changes: 0,
            first: None,
            last: None,
        }
    }
}

impl Stats {
    fn feed(&mut self, bytes: &[u8]) {
        for &c in bytes {
            let class = self.count(c);
            if self.last.is_some_and(|l| l != class) {
                self.changes += 1;
            }
            self.first.get_or_insert(class);
            self.last = Some(class);
        }
    }

    /// Feeds `bytes` as if they came before everything fed so far.
    fn prepend(&mut self, bytes: &[u8]) {
        for &c in bytes.iter().rev() {
            let class = self.count(c);
            if self.first.is_some_and(|f| f != class) {
                self.changes += 1;
            }
            self.last.get_or_insert(class);
            self.first = Some(class);
        }
    }

    /// Counts one character; returns its class (upper, lower, digit,
    /// symbol).
    fn count(&mut self, c: u8) -> u8 {
        if let Some(n) = self.counts.get_mut(usize::from(c)) {
            *n += 1;
        }
        self.chars += 1;
        match c {
            b'A'..=b'Z' => {
                self.upper = true;
                0
            }
            b'a'..=b'z' => {
                self.lower = true;
                1
            }
            b'0'..=b'9' => {
                self.digit = true;
                2
            }
            b'+' | b'/' => {
                self.standard = true;
                3
            }
            _ => {
                self.url_safe = true;
                3
            }
        }
    }

    /// Shannon entropy of the character counts, in bits per character:
    /// log2(n) - Σ c·log2(c) / n.
    fn entropy(&self) -> f64 {
        if self.chars == 0 {
            return 0.0;
        }
        let n = self.chars as f64;
        let sum: f64 = self
            .counts
            .iter()
            .filter(|&&c| c > 0)
            .map(|&c| f64::from(c) * f64::from(c).log2())
            .sum();
        n.log2() - sum / n
    }

    /// Looks like encoded bytes (see the module docs).
    fn looks_encoded(&self) -> bool {
        self.upper
            && self.lower
            && self.digit
            && !(self.standard && self.url_safe)
            && self.changes * 5 >= self.chars.saturating_sub(1) * 2
            && self.entropy() >= MIN_ENTROPY_BITS
    }
}

struct Blob {
    end: usize,
    decoded: usize,
}

/// The blob starting at `run`, if it is one.
fn blob_at(b: &[u8], run: Run, min_chars: usize, wrapped: &mut Wrapped) -> Option<Blob> {
    wrapped
        .blob_at(b, run, min_chars)
        .or_else(|| single_at(b, run, min_chars))
}

/// The blob that `run` alone is, if it is one.
fn single_at(b: &[u8], run: Run, min_chars: usize) -> Option<Blob> {
    if run.len() < min_chars || !valid_length(run.len(), run.pad) {
        return None;
    }
    if dotted(b, run) || in_url(b, run.start) {
        return None;
    }
    let mut stats = Stats::default();
    stats.feed(b.get(run.start..run.end)?);
    stats.looks_encoded().then(|| Blob {
        end: run.end_with_padding(),
        decoded: decoded_len(run.len()),
    })
}

fn valid_length(chars: usize, pad: usize) -> bool {
    if pad == 0 {
        chars % 4 != 1
    } else {
        (chars + pad) % 4 == 0
    }
}

/// Joined to another run by a dot on either side (a JWT's segments).
fn dotted(b: &[u8], run: Run) -> bool {
    let joined_left = run.start >= 2
        && b.get(run.start - 1) == Some(&b'.')
        && b.get(run.start - 2).copied().is_some_and(is_alphabet);
    let joined_right =
        b.get(run.end) == Some(&b'.') && b.get(run.end + 1).copied().is_some_and(is_alphabet);
    joined_left || joined_right
}

/// The whitespace-delimited word that `start` is in contains `://` before
/// it.
fn in_url(b: &[u8], start: usize) -> bool {
    let lo = start.saturating_sub(URL_LOOKBACK);
    let Some(before) = b.get(lo..start) else {
        return false;
    };
    let word_start = before
        .iter()
        .rposition(|&c| c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'<' | b'>'))
        .map_or(0, |p| p + 1);
    before
        .get(word_start..)
        .is_some_and(|word| word.windows(3).any(|w| w == b"://"))
}

/// Line-wrapped base64 (see the module docs), judged once per group of
/// lines.
///
/// A group is the lines that follow a first one of the same width: a blob
/// may start at any of them and always ends where the group ends, so the
/// verdict for every start is decided in one pass over the group, from its
/// last line back, with the statistics of each suffix. Judging each start
/// by reading on to the group's end would read a group of `n` lines `n`
/// times (issue 13: 0.4 s for 70 KB of `"AAAAAAAAAAAAAAAA\n"`, 4.4 s for
/// 279 KB).
#[derive(Default)]
struct Wrapped {
    /// Each line of the current group: where it starts, and the decoded
    /// size of the blob starting there (`None`: no blob starts there).
    lines: Vec<(usize, Option<usize>)>,
    /// The next line a scan reaches.
    next: usize,
    /// Where the group ends (the last line's padding included).
    end: usize,
}

impl Wrapped {
    /// The wrapped blob starting with `run`, if any.
    fn blob_at(&mut self, b: &[u8], run: Run, min_chars: usize) -> Option<Blob> {
        if self.lines.get(self.next).map(|l| l.0) != Some(run.start) {
            self.judge(b, run, min_chars);
        }
        let (_, decoded) = *self.lines.get(self.next)?;
        self.next += 1;
        decoded.map(|decoded| Blob {
            end: self.end,
            decoded,
        })
    }

    /// Finds the group starting with `run` and judges every start in it.
    fn judge(&mut self, b: &[u8], run: Run, min_chars: usize) {
        self.lines.clear();
        self.next = 0;
        let Some(lines) = group(b, run) else {
            return;
        };
        // Statistics of the lines from `k` to the last, grown backwards.
        let mut stats = Stats::default();
        let mut verdicts = vec![None; lines.len()];
        for (k, line) in lines.iter().enumerate().rev() {
            stats.prepend(b.get(line.start..line.end).unwrap_or_default());
            let taken = lines.len() - k;
            if taken >= 2 && stats.chars >= min_chars && stats.looks_encoded() {
                if let Some(v) = verdicts.get_mut(k) {
                    *v = Some(decoded_len(stats.chars));
                }
            }
        }
        self.end = lines.last().map_or(run.end, |l| l.end_with_padding());
        self.lines = lines.iter().map(|l| l.start).zip(verdicts).collect();
    }
}

/// The lines of a wrapped group starting with `run`: the first line, then
/// every following line of its width, then possibly a shorter last line
/// that ends in padding (without padding a short last line could as well
/// be a word, and it stays). `None` when `run` cannot start one.
fn group(b: &[u8], run: Run) -> Option<Vec<Run>> {
    let width = run.len();
    let at_line_start = run.start == 0 || b.get(run.start - 1) == Some(&b'\n');
    if !at_line_start || run.pad != 0 || width < MIN_WRAP_WIDTH || width % 4 != 0 {
        return None;
    }
    let mut next = line_break(b, run.end)?;
    let mut lines = vec![run];
    while b.get(next).copied().is_some_and(is_alphabet) {
        let line = scan_run(b, next);
        let line_end = line.end_with_padding();
        let after = line_break(b, line_end);
        // The line must be nothing but the run and its padding.
        if after.is_none() && line_end != b.len() {
            break;
        }
        let full = line.len() == width && line.pad == 0;
        // A short last line is taken only when padding shows it is base64:
        // a short word on the next line would look the same.
        let short_last = line.len() < width && line.pad > 0 && valid_length(line.len(), line.pad);
        if !full && !short_last {
            break;
        }
        lines.push(line);
        match after {
            Some(n) if full => next = n,
            _ => break,
        }
    }
    Some(lines)
}

/// The index just past a line break at `at` (`\n` or `\r\n`).
fn line_break(b: &[u8], at: usize) -> Option<usize> {
    match (b.get(at), b.get(at + 1)) {
        (Some(b'\n'), _) => Some(at + 1),
        (Some(b'\r'), Some(b'\n')) => Some(at + 2),
        _ => None,
    }
}

/// A base64 `data:` URI at `start`: its end and decoded size. RFC 2397:
/// `data:[<mediatype>][;base64],<data>`.
fn data_uri(b: &[u8], start: usize, min_chars: usize) -> Option<(usize, usize)> {
    let head = b.get(start..start + 5)?;
    if !head.eq_ignore_ascii_case(b"data:") {
        return None;
    }
    let params_start = start + 5;
    // The media type and parameters: short, no spaces, quotes or brackets.
    let comma = b.get(params_start..)?.iter().take(256).position(|&c| {
        c == b','
            || c.is_ascii_whitespace()
            || matches!(c, b'"' | b'\'' | b'<' | b'>' | b'(' | b')')
    })?;
    let params = b.get(params_start..params_start + comma)?;
    if b.get(params_start + comma) != Some(&b',') || params.len() < 7 {
        return None;
    }
    let label = params.get(params.len() - 7..)?;
    if !label.eq_ignore_ascii_case(b";base64") {
        return None;
    }
    let payload = params_start + comma + 1;
    let run = scan_run(b, payload);
    if run.start != payload || run.len() < min_chars {
        return None;
    }
    Some((run.end_with_padding(), decoded_len(run.len())))
}

#[cfg(test)]
mod tests;
