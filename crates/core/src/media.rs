//! HTTP media types as MCP's transports name them: `application/json` and
//! `text/event-stream` (MCP 2025-06-18 "Transports", Streamable HTTP), in
//! `content-type` and `accept`. Below every module that reads a message's
//! framing: the exchange, the page tool's replies, re-issue.

/// The media type of a `content-type` value, parameters dropped
/// (RFC 9110 §8.3.1).
pub fn media_type(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or_default().trim()
}

/// Whether a `content-type` (or an `accept` entry) names `media`, which is
/// lowercase; media types compare without regard to case (RFC 9110 §8.3.1).
/// No lowercase copy is made: this runs on every request and response.
pub fn is_media(value: &str, media: &str) -> bool {
    media_type(value).eq_ignore_ascii_case(media)
}
