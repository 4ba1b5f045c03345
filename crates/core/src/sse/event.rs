//! One complete event: its exact bytes and what a browser would dispatch
//! from them.

use super::lines::{Field, Line, Lines, LF};

/// A complete event (a block ended by a blank line, with at least one
/// `data` field). Keeps the bytes it was parsed from, so it can be
/// forwarded untouched ([`Event::into_raw`]) or re-framed with new data
/// ([`Event::with_data`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub(super) raw: Vec<u8>,
    /// The data buffer as dispatched: every `data` value, joined with LF.
    data: Vec<u8>,
    event_type: Option<String>,
    id: Option<String>,
    /// Where the `data` lines are in `raw`, in order; never empty.
    pub(super) data_lines: Vec<Line>,
    /// The first `data` line had a space after its colon (`data: x`).
    pub(super) spaced: bool,
}

impl Event {
    /// Parses one complete block, blank line included. Returns the bytes
    /// back when the block has no `data` field: §9.2.6 "If the data buffer
    /// is an empty string, set the data buffer and the event type buffer to
    /// the empty string and return" — nothing is dispatched.
    pub(super) fn parse(raw: Vec<u8>) -> Result<Event, Vec<u8>> {
        let mut data = Vec::new();
        let mut data_lines = Vec::new();
        let mut spaced = false;
        let mut event_type = None;
        let mut id = None;
        for line in Lines::new(&raw) {
            let text = raw.get(line.start..line.content_end).unwrap_or_default();
            let Field::Named {
                name,
                value,
                spaced: sp,
            } = Field::parse(text)
            else {
                continue;
            };
            match name {
                // "Append the field value to the data buffer, then append a
                // single U+000A LINE FEED (LF) character to the data buffer."
                b"data" => {
                    if data_lines.is_empty() {
                        spaced = sp;
                    }
                    data.extend_from_slice(value);
                    data.push(LF);
                    data_lines.push(line);
                }
                // "Set the event type buffer to field value."
                b"event" => event_type = Some(lossy(value)),
                // "If the field value does not contain U+0000 NULL, then set
                // the last event ID buffer to the field value."
                b"id" if !value.contains(&0) => id = Some(lossy(value)),
                // `retry` sets the reconnection time and any other field is
                // ignored: neither concerns the data, both stay in `raw`.
                _ => {}
            }
        }
        if data_lines.is_empty() {
            return Err(raw);
        }
        // "If the data buffer's last character is a U+000A LINE FEED (LF)
        // character, then remove the last character from the data buffer."
        data.pop();
        Ok(Event {
            raw,
            data,
            event_type,
            id,
            data_lines,
            spaced,
        })
    }

    /// The bytes as received (for an event whose blank line ended with a CR
    /// at the end of a chunk, without the LF that may follow: that LF comes
    /// as the next unit).
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// The bytes as received, without copying.
    pub fn into_raw(self) -> Vec<u8> {
        self.raw
    }

    /// The data as dispatched (lines joined with LF), or `None` if it is not
    /// valid UTF-8. A browser would decode such bytes with replacement
    /// characters; a rewrite would then change bytes it did not mean to, so
    /// the caller should pass the event through.
    pub fn data(&self) -> Option<&str> {
        std::str::from_utf8(&self.data).ok()
    }

    #[cfg(test)]
    /// The data as dispatched, as bytes.
    pub(crate) fn data_bytes(&self) -> &[u8] {
        &self.data
    }

    /// The event type: the last `event` field, or `"message"` when there is
    /// none or it is empty (§9.2.6 dispatch, steps 5 and 6).
    pub fn event_type(&self) -> &str {
        match self.event_type.as_deref() {
            Some(t) if !t.is_empty() => t,
            _ => "message",
        }
    }

    #[cfg(test)]
    /// The last `id` field of this event, if any (an empty value resets the
    /// client's last event ID, hence `Some("")`).
    pub(crate) fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// A cheap test that the data could be a JSON-RPC message or batch: its
    /// first byte other than JSON whitespace is `{` or `[`. The pipeline
    /// does the real parse.
    pub fn looks_like_json(&self) -> bool {
        self.data
            .iter()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .is_some_and(|&b| b == b'{' || b == b'[')
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
