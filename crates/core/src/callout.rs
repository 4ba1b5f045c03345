//! An HTTP call the core asks the host to make, and its reply: the trim
//! stage's call to the LLM, and a re-issued `tools/call` of a page the
//! gateway does not hold (`crate::exchange`). The core builds an
//! [`LlmRequest`] and judges the [`LlmReply`]; the driver dispatches the
//! one and reads the other through the [`crate::host::Host`].

/// An HTTP call for the host to make.
#[derive(Clone, PartialEq, Eq)]
pub struct LlmRequest {
    pub cluster: String,
    /// Pseudo-headers (`:method`, `:path`, `:authority`) first, then the rest.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout_ms: u64,
}

// Headers may carry the client secret: Debug never shows header values.
impl std::fmt::Debug for LlmRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("LlmRequest")
            .field("cluster", &self.cluster)
            .field("headers", &names)
            .field("body_bytes", &self.body.len())
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

/// What came back from the host's HTTP call, as the driver read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LlmReply {
    /// A response with a status and a body.
    Response { status: u16, body: Vec<u8> },
    /// No response: the call failed or timed out after `elapsed_ms`.
    Failed { elapsed_ms: u64 },
    /// The host refused to start the call (for example an unknown cluster).
    NotSent,
    /// A response whose body is larger than `trim.max_reply_bytes`: not
    /// read (a reply is held whole in the VM's memory to be parsed).
    TooLarge { status: u16, bytes: usize },
}
