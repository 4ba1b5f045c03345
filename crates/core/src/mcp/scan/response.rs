//! A response body: every JSON-RPC response of it, and of each `result`
//! its `CallToolResult` shape (`content[]` items, `isError`; MCP
//! 2025-06-18 "Tools").

use std::borrow::Cow;

use super::{Field, Scanner, Texts};
use crate::mcp::id_key;

/// One JSON-RPC response of a body (requests and notifications from the
/// server are skipped: their ids are the server's).
#[derive(Debug)]
pub struct Scanned<'a> {
    /// The id as [`crate::mcp::id_key`] writes it.
    pub id: Option<String>,
    pub is_error_response: bool,
    /// The text of the `result` value, when it is there and not `null`.
    pub result: Option<&'a str>,
    /// `result` read as a `CallToolResult`; `None` when it is none (not an
    /// object, `content` not an array, `isError` not a boolean, either
    /// written twice).
    pub tool: Option<ToolShape<'a>>,
}

/// A `CallToolResult` (MCP 2025-06-18 "Tools").
#[derive(Debug, Default)]
pub struct ToolShape<'a> {
    /// The items of `content[]` in order, each `None` when it is not an
    /// object with a string (or absent) `type`, or names a field twice.
    pub content: Option<Vec<Option<Item<'a>>>>,
    pub is_error: Option<bool>,
    /// The text of `structuredContent`, when it is there and not `null`
    /// (MCP 2025-06-18): a changed `content` must not contradict it.
    pub structured_content: Option<&'a str>,
}

/// A content item.
#[derive(Debug, Default)]
pub struct Item<'a> {
    pub kind: Option<Cow<'a, str>>,
    /// The text of the `text` value (any JSON value; a string for a text
    /// item).
    pub text: Option<&'a str>,
    /// A string `text` as the scan read it, when serde_json decodes it.
    read: Option<Text>,
}

/// The value of a text item's string `text`, as far as the scan read it.
#[derive(Debug, PartialEq, Eq)]
pub enum Text {
    /// Decoded, with whether the value, read as JSON, has whitespace
    /// between its tokens and an escape in a string (see
    /// [`super::literal`]).
    Decoded {
        value: String,
        layout: bool,
        escapes: bool,
    },
    /// Not decoded ([`Texts::SkimNotJson`]): the value is certainly no
    /// JSON text; its length in bytes.
    NotJson { len: usize },
}

impl Item<'_> {
    /// The value of `text` when it is a string serde_json decodes; taken,
    /// as a block owns its text.
    pub fn take_text(&mut self) -> Option<Text> {
        self.read.take()
    }
}

/// The responses of a body, or `None` when it is not one JSON object or an
/// array of them (or a message names a field twice); every text decoded.
pub fn response(text: &str) -> Option<Vec<Scanned<'_>>> {
    response_reading(text, Texts::Decode)
}

/// [`response`], reading text items as `texts` says.
pub fn response_reading(text: &str, texts: Texts) -> Option<Vec<Scanned<'_>>> {
    Scanner::body(text, texts, Scanner::message)
}

impl<'a> Scanner<'a> {
    /// One message of the body; `Some(None)` for a server request or
    /// notification (skipped), `None` when the body is not understood.
    fn message(&mut self) -> Option<Option<Scanned<'a>>> {
        if self.peek()? != b'{' {
            return None;
        }
        let mut id = Field::default();
        let mut method = Field::default();
        let mut result = Field::default();
        let mut error = Field::default();
        let mut tool = None;
        // serde reads each key of a message: one it cannot decode is an
        // error for the whole body.
        self.object(|s, key| match key?.as_ref() {
            "id" => {
                let v = if s.null()? { None } else { Some(s.raw()?) };
                id.set(v)
            }
            "method" => {
                let v = if s.null()? { None } else { Some(s.raw()?) };
                method.set(v)
            }
            "error" => {
                let v = if s.null()? { None } else { Some(s.raw()?) };
                error.set(v)
            }
            "result" => {
                let v = if s.null()? {
                    None
                } else {
                    let start = s.i;
                    tool = s.tool_result()?;
                    Some(s.text.get(start..s.i)?)
                };
                result.set(v)
            }
            _ => s.value(),
        })?;
        if method.value.is_some() {
            return Some(None);
        }
        let id = id
            .value
            .and_then(|raw| serde_json::from_str(raw).ok())
            .and_then(id_key);
        Some(Some(Scanned {
            id,
            is_error_response: error.value.is_some(),
            result: result.value,
            tool: if result.value.is_some() { tool } else { None },
        }))
    }

    /// A `result` value (skipped whole); `Some(None)` when it is not a
    /// `CallToolResult`.
    fn tool_result(&mut self) -> Option<Option<ToolShape<'a>>> {
        if self.peek()? != b'{' {
            self.value()?;
            return Some(None);
        }
        let mut content: Field<Vec<Option<Item<'a>>>> = Field::default();
        let mut is_error: Field<bool> = Field::default();
        let mut structured: Field<&'a str> = Field::default();
        let mut shaped = true;
        self.object(|s, key| match key.as_deref() {
            None => {
                shaped = false;
                s.value()
            }
            Some("content") => {
                if s.null()? {
                    shaped &= content.set(None).is_some();
                    return Some(());
                }
                if s.peek()? != b'[' {
                    shaped = false;
                    return s.value();
                }
                let mut items = Vec::new();
                s.array(|s| {
                    items.push(s.item()?);
                    Some(())
                })?;
                shaped &= content.set(Some(items)).is_some();
                Some(())
            }
            Some("isError") => {
                let v = match s.peek()? {
                    b't' | b'f' | b'n' => {
                        let start = s.i;
                        s.value()?;
                        match s.b.get(start..s.i)? {
                            b"true" => Some(true),
                            b"false" => Some(false),
                            _ => None,
                        }
                    }
                    _ => {
                        shaped = false;
                        return s.value();
                    }
                };
                shaped &= is_error.set(v).is_some();
                Some(())
            }
            Some("structuredContent") => {
                let v = if s.null()? { None } else { Some(s.raw()?) };
                shaped &= structured.set(v).is_some();
                Some(())
            }
            _ => s.value(),
        })?;
        Some(shaped.then_some(ToolShape {
            content: content.value,
            is_error: is_error.value,
            structured_content: structured.value,
        }))
    }

    /// A content item (skipped whole); `Some(None)` when it is not an
    /// object with a string `type`, or names a field twice.
    fn item(&mut self) -> Option<Option<Item<'a>>> {
        if self.peek()? != b'{' {
            self.value()?;
            return Some(None);
        }
        let mut kind: Field<Cow<'a, str>> = Field::default();
        let mut text: Field<&'a str> = Field::default();
        let mut read = None;
        let mut shaped = true;
        self.object(|s, key| match key.as_deref() {
            None => {
                shaped = false;
                s.value()
            }
            Some("type") => {
                let v = match s.peek()? {
                    b'"' => match s.string()? {
                        Some(v) => Some(v),
                        None => {
                            shaped = false;
                            return Some(());
                        }
                    },
                    b'n' if s.null()? => None,
                    _ => {
                        shaped = false;
                        return s.value();
                    }
                };
                shaped &= kind.set(v).is_some();
                Some(())
            }
            Some("text") => {
                let v = match s.peek()? {
                    // Checked and decoded in one pass: a text item's
                    // literal is most of a result.
                    b'"' => {
                        let start = s.i;
                        let (len, text) = s.text_literal()?;
                        s.i = start + len;
                        read = text;
                        Some(s.text.get(start..s.i)?)
                    }
                    _ if s.null()? => None,
                    _ => Some(s.raw()?),
                };
                shaped &= text.set(v).is_some();
                Some(())
            }
            _ => s.value(),
        })?;
        Some(shaped.then_some(Item {
            kind: kind.value,
            text: text.value,
            read,
        }))
    }

    /// The text literal here, read as [`Scanner::texts`] says: its length
    /// and its value, `None` where serde_json refuses to decode it.
    fn text_literal(&self) -> Option<(usize, Option<Text>)> {
        let b = self.b.get(self.i..)?;
        match self.texts {
            Texts::Decode => {}
            Texts::SkimNotJson | Texts::SkimNotLiteral => {
                let skimmed = if self.texts == Texts::SkimNotJson {
                    super::skim::not_json(b)
                } else {
                    super::skim::not_literal(b)
                };
                if let Some((len, text)) = skimmed {
                    return Some((len, text.map(|len| Text::NotJson { len })));
                }
            }
            // Past the opening quote the item's caller saw.
            Texts::Check => return Some((super::literal::measure(b, 1)?.0, None)),
        }
        let (len, d) = super::literal::read(b)?;
        let text = d.value.map(|value| Text::Decoded {
            value,
            layout: d.layout,
            escapes: d.escapes,
        });
        Some((len, text))
    }
}
