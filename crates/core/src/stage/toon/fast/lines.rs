//! A flat table's rows written as their TOON lines (§9.3: one line of
//! cells per row, joined by the delimiter) while the parser reads them,
//! for a table below the root ([`super::tree::Table`]).
//!
//! The same cells as the streamed path writes for a root table
//! ([`super::stream`]): the plainest rows the short way ([`row::take`]),
//! others from their members with [`push_primitive`]; with `verify`, each
//! line is decoded on the spot by the strict decoder's row rules
//! ([`decode::values_are`], [`decode::cells_are`]) against the values it
//! was written from. A row that cannot be written (a number TOON cannot
//! carry, §2) ends the table's reading, and the parser reads the array
//! again as any other.

use toon_format::types::EncodeOptions;

use super::decode;
use super::emit::push_primitive;
use super::key::KeyLiteral;
use super::row::{self, Taken};
use super::tree::{Member, Node};

/// How rows are written: the delimiter, whether each line is verified,
/// and whether plain rows go the short way.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rows {
    delim: u8,
    verify: bool,
    quick: bool,
}

impl Rows {
    /// `None` for a delimiter that is not one byte (toon-format's are).
    pub(super) fn new(options: &EncodeOptions, verify: bool) -> Option<Self> {
        let delim = u8::try_from(options.delimiter.as_char()).ok()?;
        Some(Self {
            delim,
            verify,
            quick: row::takes(delim),
        })
    }

    /// The row at `at` in `text`, when it is the plainest kind: its line
    /// appended to `out` (with its line feed) and its values set in
    /// `cells`; `None`, `out` as it was, for the general way to read it.
    pub(super) fn take<'a>(
        &self,
        text: &'a str,
        at: usize,
        keys: &[KeyLiteral<'a>],
        out: &mut String,
        cells: &mut [Node<'a>],
    ) -> Option<Taken> {
        if !self.quick {
            return None;
        }
        let start = out.len();
        let taken = row::take(text, at, keys, self.delim, out, cells).filter(|_| {
            !self.verify
                || reads_back(out, start, self.delim, |line, d| {
                    decode::values_are(line, d, cells)
                })
        });
        match taken {
            Some(t) => {
                out.push('\n');
                Some(t)
            }
            None => {
                out.truncate(start);
                None
            }
        }
    }

    /// A row's line from its members (their keys checked already): `None`,
    /// `out` as it was, when a value is no primitive TOON carries.
    pub(super) fn cells(&self, out: &mut String, members: &[Member<'_>]) -> Option<()> {
        let start = out.len();
        let written = self.write(out, members).filter(|_| {
            !self.verify
                || reads_back(out, start, self.delim, |line, d| {
                    decode::cells_are(line, d, members)
                })
        });
        match written {
            Some(()) => {
                out.push('\n');
                Some(())
            }
            None => {
                out.truncate(start);
                None
            }
        }
    }

    fn write(&self, out: &mut String, members: &[Member<'_>]) -> Option<()> {
        for (j, m) in members.iter().enumerate() {
            if !m.value.is_primitive() {
                return None;
            }
            if j > 0 {
                out.push(char::from(self.delim));
            }
            push_primitive(out, &m.value, char::from(self.delim))?;
        }
        Some(())
    }
}

/// The line written from `start` on is one [`decode::content_ok`] takes
/// and `check` reads back.
fn reads_back(
    out: &str,
    start: usize,
    delim: u8,
    check: impl FnOnce(&str, u8) -> Option<()>,
) -> bool {
    out.get(start..)
        .is_some_and(|line| decode::content_ok(line) && check(line, delim).is_some())
}
