//! A second reading of §9.2.6, as literal as it gets: decode the whole
//! stream, walk it character by character, keep the spec's buffers. Slow
//! and non-incremental on purpose; the framer must dispatch the same
//! events for any chunking.

/// (event type, data) of every event a browser would dispatch from the
/// complete `stream`.
pub(super) fn dispatched(stream: &[u8]) -> Vec<(String, String)> {
    // "Streams must be decoded using the UTF-8 decode algorithm", which
    // "strips one leading UTF-8 Byte Order Mark (BOM), if any".
    let text = String::from_utf8_lossy(stream);
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    let mut state = State::default();
    let mut line = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                state.line(&line);
                line.clear();
            }
            '\n' => {
                state.line(&line);
                line.clear();
            }
            _ => line.push(c),
        }
    }
    // "Once the end of the file is reached, any pending data must be
    // discarded."
    state.out
}

#[derive(Default)]
struct State {
    data: String,
    event_type: String,
    out: Vec<(String, String)>,
}

impl State {
    fn line(&mut self, line: &str) {
        if line.is_empty() {
            self.dispatch();
        } else if line.starts_with(':') {
        } else if let Some((field, value)) = line.split_once(':') {
            let value = value.strip_prefix(' ').unwrap_or(value);
            self.field(field, value);
        } else {
            self.field(line, "");
        }
    }

    fn field(&mut self, name: &str, value: &str) {
        match name {
            "event" => self.event_type = value.to_owned(),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        if self.data.is_empty() {
            self.event_type.clear();
            return;
        }
        if self.data.ends_with('\n') {
            self.data.pop();
        }
        let event_type = if self.event_type.is_empty() {
            "message".to_owned()
        } else {
            std::mem::take(&mut self.event_type)
        };
        self.out.push((event_type, std::mem::take(&mut self.data)));
        self.event_type.clear();
    }
}
