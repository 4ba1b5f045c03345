//! What happened to a block or a whole response, and why: the vocabulary of
//! the decision record, the metrics and the `x-mcp-toon` header.

/// The stage that made a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Whole-response checks before any block is looked at.
    Response,
    /// TOON encoding of a text block.
    Toon,
    /// The `annotate_tools` hint in a `tools/list` response.
    Annotate,
    /// The clean transforms (and the `max_text_bytes` cap).
    Clean,
    /// Intent-driven trimming through an LLM endpoint.
    Trim,
    /// The optional intent argument added to `tools/list` input schemas.
    Advertise,
    /// The per-tool budget: a result cut to fit.
    Budget,
    /// The page tool: a page served, or a page call refused.
    Page,
    /// Operator field rules and agent queries (JMESPath).
    Project,
    /// `tools/list` results made to fit (`listings`, docs/listings.md) and
    /// the tools the plugin adds to them.
    Listing,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Response => "response",
            Stage::Toon => "toon",
            Stage::Annotate => "annotate",
            Stage::Clean => "clean",
            Stage::Trim => "trim",
            Stage::Advertise => "advertise",
            Stage::Budget => "budget",
            Stage::Page => "page",
            Stage::Project => "project",
            Stage::Listing => "listing",
        }
    }
}

/// A decision: the block (or response) changed, or passed through for a
/// named reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Encoded,
    Cleaned,
    Annotated,
    Trimmed,
    /// A result cut to its budget (lossy: the rest is paged or gone).
    Cut,
    /// A page served from this gateway's store.
    Paged,
    /// A page served by calling the tool again.
    Reissued,
    /// Operator rules dropped fields.
    Projected,
    /// The agent's query replaced the block with its result.
    Queried,
    /// A `tools/list` result with its tools compacted (`listings.mode:
    /// compact`).
    Compacted,
    /// A `tools/list` result answered with the hot tools and the added
    /// ones (`listings.mode: disclose`).
    Disclosed,
    /// A call of an added tool (search, describe) answered by the plugin.
    Answered,
    /// A call of the call tool rewritten into the real `tools/call`.
    Rewritten,
    Passthrough(Reason),
}

impl Outcome {
    /// Every outcome that changes something; each has a metric
    /// `mcp_toon_<name>`.
    pub(crate) const CHANGES: &'static [Outcome] = &[
        Outcome::Encoded,
        Outcome::Cleaned,
        Outcome::Annotated,
        Outcome::Trimmed,
        Outcome::Cut,
        Outcome::Paged,
        Outcome::Reissued,
        Outcome::Projected,
        Outcome::Queried,
        Outcome::Compacted,
        Outcome::Disclosed,
        Outcome::Answered,
        Outcome::Rewritten,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Encoded => "encoded",
            Outcome::Cleaned => "cleaned",
            Outcome::Annotated => "annotated",
            Outcome::Trimmed => "trimmed",
            Outcome::Cut => "cut",
            Outcome::Paged => "paged",
            Outcome::Reissued => "reissued",
            Outcome::Projected => "projected",
            Outcome::Queried => "queried",
            Outcome::Compacted => "compacted",
            Outcome::Disclosed => "disclosed",
            Outcome::Answered => "answered",
            Outcome::Rewritten => "rewritten",
            Outcome::Passthrough(_) => "passthrough",
        }
    }

    pub fn changed(self) -> bool {
        !matches!(self, Outcome::Passthrough(_))
    }

    /// Its counter: `mcp_toon_<name>` for a change, the reason's for a
    /// passthrough.
    pub(crate) fn metric(self) -> &'static str {
        match self {
            Outcome::Encoded => "mcp_toon_encoded",
            Outcome::Cleaned => "mcp_toon_cleaned",
            Outcome::Annotated => "mcp_toon_annotated",
            Outcome::Trimmed => "mcp_toon_trimmed",
            Outcome::Cut => "mcp_toon_cut",
            Outcome::Paged => "mcp_toon_paged",
            Outcome::Reissued => "mcp_toon_reissued",
            Outcome::Projected => "mcp_toon_projected",
            Outcome::Queried => "mcp_toon_queried",
            Outcome::Compacted => "mcp_toon_compacted",
            Outcome::Disclosed => "mcp_toon_disclosed",
            Outcome::Answered => "mcp_toon_answered",
            Outcome::Rewritten => "mcp_toon_rewritten",
            Outcome::Passthrough(r) => r.metric(),
        }
    }
}

macro_rules! reasons {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// Why something passed through unchanged. Every reason has a metric
        /// `mcp_toon_passthrough_<name>`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Reason {
            $($(#[$doc])* $variant,)*
        }

        impl Reason {
            /// Every reason, for hosts that define their metrics up front.
            pub(crate) const ALL: &'static [Reason] = &[$(Reason::$variant,)*];

            /// Snake-case name used in metrics, logs and the decision record.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Reason::$variant => $name,)*
                }
            }

            /// Its counter, `mcp_toon_passthrough_<name>`: spelt at build
            /// time, since every stream the plugin sees moves one.
            pub(crate) fn metric(self) -> &'static str {
                match self {
                    $(Reason::$variant => concat!("mcp_toon_passthrough_", $name),)*
                }
            }
        }
    };
}

reasons! {
    /// The request was not a JSON-RPC body (or not a POST with JSON).
    RequestNotJsonRpc => "request_not_jsonrpc",
    /// The request body was larger than `max_body_bytes`.
    RequestTooLarge => "request_too_large",
    /// No `tools/call` (or, with `annotate_tools`, `tools/list`) in the request.
    NotToolsCall => "not_tools_call",
    /// The configuration changes nothing for the stream's server (every
    /// stage off for every tool, no query, no listing rewritten): passed at
    /// its request headers, no body read, no decision record.
    PolicyOff => "policy_off",
    /// The response is not `application/json`.
    NotJsonResponse => "not_json_response",
    /// An SSE event larger than `max_event_bytes` streamed through unmodified.
    EventTooLarge => "event_too_large",
    /// An SSE stream ended inside an event; the partial event went out unchanged.
    StreamTruncated => "stream_truncated",
    /// The response carries a `content-encoding` other than identity.
    ContentEncoding => "content_encoding",
    /// The response body was larger than `max_body_bytes`.
    ResponseTooLarge => "response_too_large",
    /// The response status is not 2xx.
    HttpStatus => "http_status",
    /// The response body is not valid UTF-8.
    InvalidUtf8 => "invalid_utf8",
    /// The response body is not one JSON-RPC message or batch.
    MalformedResponse => "malformed_response",
    /// A JSON-RPC error response.
    JsonRpcError => "jsonrpc_error",
    /// A tool result with `isError: true`.
    IsError => "is_error",
    /// A response whose id matches no `tools/call` of the request.
    UnknownId => "unknown_id",
    /// The tool result has no `content` array.
    NoContent => "no_content",
    /// The resolved mode for this tool is `off`.
    ModeOff => "mode_off",
    /// The text already starts with the marker.
    AlreadyEncoded => "already_encoded",
    /// The text is shorter than `toon.min_bytes`.
    BelowMinBytes => "below_min_bytes",
    /// The text is not exactly one JSON value.
    NotJson => "not_json",
    /// The text is no JSON but exactly a Python literal's `repr` (a
    /// server's `str(rows)`) that could have been read as data and
    /// encoded: `clean.python_literal` (or `clean.compact_json`, which
    /// writes it) is off for this tool. Its bytes are what it would save
    /// on.
    PythonLiteralOff => "python_literal_off",
    /// The JSON is not a table (see the classifier).
    NotTabular => "not_tabular",
    /// The emission is not `min_savings_pct` smaller than the block.
    BelowThreshold => "below_threshold",
    /// A number would not survive TOON exactly (beyond 2^64, `-0`, too many digits).
    LossyNumber => "lossy_number",
    /// Rows list their keys in different orders; one TOON header cannot keep them.
    KeyOrder => "key_order",
    /// An object has the same key twice.
    DuplicateKeys => "duplicate_keys",
    /// `clean.max_text_bytes` cannot hold the TOON header and one row: the block goes unencoded.
    CapTooSmall => "cap_too_small",
    /// Clean: converting the block's HTML would pass the work budget (markup
    /// nested past 512 elements, or needing more parser work or Markdown
    /// than its size allows); the block passed the clean stage unchanged.
    HtmlBudget => "html_budget",
    /// TOON: a block only the generic path can decide, past what is left of
    /// the response's budget for it (16 KiB of text); it passed unencoded.
    ToonBudget => "toon_budget",
    /// The emission did not decode back to the original value.
    VerifyFailed => "verify_failed",
    /// The TOON encoder returned an error.
    EncodeError => "encode_error",
    /// A content item with a `text` that is not a string, or another shape error.
    MalformedContent => "malformed_content",
    /// Trim: the request declared no intent.
    TrimNoIntent => "trim_no_intent",
    /// Trim: the cleaned block is not larger than `threshold_bytes`.
    TrimBelowThreshold => "trim_below_threshold",
    /// Trim: the endpoint did not answer within `timeout_ms`.
    TrimTimeout => "trim_timeout",
    /// Trim: the endpoint answered with a non-2xx status.
    TrimStatus => "trim_status",
    /// Trim: the reply was not a chat completion with usable content.
    TrimMalformed => "trim_malformed",
    /// Trim: the extraction was not smaller than the cleaned block.
    TrimLarger => "trim_larger",
    /// Trim: the call could not be made (unknown cluster, connection refused).
    TrimUnavailable => "trim_unavailable",
    /// Trim: the declared intent is longer than `trim.max_intent_bytes`; no
    /// callout.
    TrimIntentTooLong => "trim_intent_too_long",
    /// Trim: the reply is larger than `trim.max_reply_bytes`; it was not read.
    TrimReplyTooLarge => "trim_reply_too_large",
    /// Trim: more than `trim.max_queued_bytes` waited for the callout (the
    /// event and what followed it), or the event alone is larger; the block
    /// went on without it.
    TrimQueueFull => "trim_queue_full",
    /// Trim: the extraction is not drawn from the block (a JSON value, key
    /// or line the block does not have).
    TrimNotFromInput => "trim_not_from_input",
    /// Trim: the extraction starts with the marker, as the plugin's own
    /// output does.
    TrimMarker => "trim_marker",
    /// Trim: the result carries `structuredContent`, which a trimmed
    /// `content` would contradict.
    TrimStructuredContent => "trim_structured_content",
    /// A JSON-RPC id longer than `max_id_bytes`: the call is not followed.
    IdTooLong => "id_too_long",
    /// A tool name longer than `max_tool_name_bytes`: the call is not followed.
    ToolNameTooLong => "tool_name_too_long",
    /// A 2024-11-05 record was not written: its slot holds a live record of
    /// another session (or of the same call).
    LegacySlotBusy => "legacy_slot_busy",
    /// A tool that declares the intent argument itself was not recorded:
    /// the record of its server is full, or its server found no slot (every
    /// slot its name may take holds another server's live record).
    ListingRecordFull => "listing_record_full",
    /// A 2024-11-05 call took the slot of an earlier call of its own
    /// session that was still waiting for its result: a session holds at
    /// most `legacy_session_slots` slots. The earlier call's result is
    /// recognised by its shape.
    LegacySessionFull => "legacy_session_full",
    /// The stream would have taken the bytes the VM's streams hold (with
    /// the working memory of their stages) past `max_vm_held_bytes`: what
    /// it held went on as it came, and the rest passed unread.
    VmMemoryBudget => "vm_memory_budget",
    /// The host refused a call that moves bytes (a body read or write, the
    /// `content-length` of held headers): the rest of that direction passed
    /// unchanged, the bytes the plugin held first.
    HostRefused => "host_refused",
    /// Trailers ended a body in the middle of a message (a JSON value or an
    /// SSE event never finished) and the host had no buffer to write the
    /// held bytes into: they were dropped. A well-formed message is always
    /// sent before its trailers.
    LostAtTrailers => "lost_at_trailers",
    /// The stream was reset (the upstream cut it short, or the client left)
    /// while the plugin held bytes of an unfinished message: they went with
    /// the stream.
    LostAtReset => "lost_at_reset",
    /// The host refused a body write, then refused again to take back the
    /// bytes the plugin held, at its last chance (the last chunk, trailers,
    /// a callout reply): they were dropped; what the host's own buffer held
    /// went on.
    LostAtRefusal => "lost_at_refusal",
    /// Budget: the notice alone fills the budget; the result passes whole.
    BudgetTooSmall => "budget_too_small",
    /// Budget: the result is over its budget but carries
    /// `structuredContent`, which a cut `content` would contradict; it
    /// passes whole.
    BudgetStructuredContent => "budget_structured_content",
    /// Budget: the pages of a cut result could not be kept in this
    /// gateway's store (more than it, or one owner's quota, holds; no room
    /// without evicting another owner's pages within its fair share; or no
    /// shared data).
    PageNotKept => "page_not_kept",
    /// Page tool: called without a `handle` string.
    PageMissing => "page_missing",
    /// Page tool: a handle this plugin did not write, or signed with another key.
    PageForged => "page_forged",
    /// Page tool: a well-formed handle whose page is not held here and cannot be rebuilt.
    PageUnknown => "page_unknown",
    /// Page tool: the handle's time to live has passed.
    PageExpired => "page_expired",
    /// Page tool: the handle belongs to another owner: another caller
    /// (`paging.owner`: credentials, a header, auth metadata), MCP session
    /// or server. Never served, never re-issued.
    PageForeign => "page_foreign",
    /// Page tool: calling the tool again gave a different result.
    PageChanged => "page_changed",
    /// Page tool: calling the tool again failed (status, timeout, not sent).
    PageReissueFailed => "page_reissue_failed",
    /// Page tool: calling the tool again returned more than
    /// `paging.max_result_bytes`; the reply was not read.
    PageReissueTooLarge => "page_reissue_too_large",
    /// A re-issued call that came back through the gateway's own listener
    /// (`paging.reissue_cluster`), recognised by its mark: it passed
    /// untouched (the stream that re-issued it runs the stages).
    Reentrant => "reentrant",
    /// A request carried a re-issue mark that does not verify (forged,
    /// expired, for another call): the header was removed and the request
    /// treated as any other.
    ReissueMarkInvalid => "reissue_mark_invalid",
    /// Trim: the agent's query already cut the block to what it asked for.
    TrimQueryApplied => "trim_query_applied",
    /// Project: no keep or drop rule removed anything.
    ProjectNoMatch => "project_no_match",
    /// Project: the rules would leave nothing (an empty object or array).
    ProjectEmpty => "project_empty",
    /// Query: not valid JMESPath, an unknown function, or over the length or nesting limit.
    QueryInvalid => "query_invalid",
    /// Query: its output or work could exceed the bounds (see the README).
    QueryTooComplex => "query_too_complex",
    /// Query: evaluating it failed (a type error, a wrong argument).
    QueryError => "query_error",
    /// Query: it selected nothing (`null`, `[]`, `{}` or `""`).
    QueryEmpty => "query_empty",
    /// Query: its result is not smaller than the block.
    QueryLarger => "query_larger",
    /// Query: the tool's policy does not accept queries.
    QueryOff => "query_off",
    /// Query: evaluating it would pass its work or memory budget
    /// (`project.query_work_*`, `project.query_memory_*`, scaled to the
    /// block); it stopped there.
    QueryBudget => "query_budget",
    /// Listing: a `tools/list` result the plugin does not understand (no
    /// `tools` array of objects each with a string `name`, two tools of one
    /// name, a member written twice); it passed as sent.
    ListingNotUnderstood => "listing_not_understood",
    /// Listing: the server scope's tools pass `listings.max_tools` or
    /// `listings.max_listing_bytes`; the listing passed as sent.
    ListingTooLarge => "listing_too_large",
    /// Listing: a server tool has the name of a tool the plugin adds; the
    /// listing passed as sent.
    ListingShadowed => "listing_shadowed",
    /// Listing: the server scope's kept listing could not be stored in
    /// shared data (the host refused, or another worker wrote it first).
    CatalogNotKept => "catalog_not_kept",
    /// Listing: an added tool was called and no kept listing of the server
    /// scope is held here (another VM, expired, never listed): the agent
    /// was told to list tools again.
    CatalogMissing => "catalog_missing",
    /// Listing: a call of an added tool the plugin refused (no `name`,
    /// a tool the server does not have, arguments that are no object).
    ListingCallRefused => "listing_call_refused",
}
