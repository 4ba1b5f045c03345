//! The project stage: keeps only the parts of a JSON tool result that are
//! wanted, deterministically, without a model.
//!
//! - Operator rules ([`rules`]): `project.keep` / `project.drop` paths per
//!   server and tool (`config::project::path` has the syntax, parsed when
//!   the configuration is read; [`path`] matches it), applied to the text
//!   without re-serialising what stays.
//! - Agent queries ([`query`]): a JMESPath expression the agent sends in an
//!   extra tool argument (`project.query_argument`, advertised and taken out
//!   of requests by [`crate::intent`]), checked against a static bound
//!   before it runs and evaluated within a work and memory budget enforced
//!   while it runs. A query that cannot apply leaves the result as it was,
//!   with a one-line [`note`] at its end.
//!
//! Both drop information by design: the decision record says
//! `lossless: false`.

pub(crate) mod path;
pub(crate) mod query;
pub mod rules;

pub use query::{Query, Refusal};

/// The line appended to a block whose query was not applied: an agent
/// that asked for a projection learns why it got the whole result. Like
/// the `max_text_bytes` notice it starts with `\n[mcp-toon:`.
pub fn note(refusal: &Refusal) -> String {
    format!(
        "\n[mcp-toon: query not applied ({}): {}; this is the full result]",
        refusal.reason.as_str(),
        refusal.detail
    )
}
