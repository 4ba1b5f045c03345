//! The WIT glue: `wit_bindgen::generate!` writes the canonical-ABI lifting
//! and lowering for `wit/mcp-toon.wit`; the impls below only convert types
//! and call the functions in `super`.

// The generated glue and the `export!` macro are unsafe code by nature
// (raw pointers across the canonical ABI); nothing hand-written here is.
#![allow(unsafe_code)]

use std::sync::Arc;

use crate::config::Settings;

wit_bindgen::generate!({
    path: "wit",
    world: "mcp-toon",
});

use exports::mcp_toon::plugin::core::{Guest, GuestProcessor, Processed, Processor};

/// The component's exports.
struct Component;

impl Guest for Component {
    type Processor = ProcessorImpl;

    fn toon_encode(json: String) -> Result<String, String> {
        super::toon_encode(&json)
    }

    fn toon_decode(toon: String) -> Result<String, String> {
        super::toon_decode(&toon)
    }

    fn project_query(
        json: String,
        expression: String,
        max_query_bytes: u32,
    ) -> Result<String, String> {
        super::project_query(&json, &expression, max_query_bytes)
    }
}

/// The `processor` resource: a validated configuration.
struct ProcessorImpl {
    settings: Arc<Settings>,
}

impl GuestProcessor for ProcessorImpl {
    fn create(config: String) -> Result<Processor, String> {
        let settings = super::configure(&config)?;
        Ok(Processor::new(ProcessorImpl { settings }))
    }

    fn process_response(
        &self,
        request_body: Vec<u8>,
        content_type: String,
        response_body: Vec<u8>,
    ) -> Processed {
        let out = super::process(&self.settings, &request_body, &content_type, response_body);
        Processed {
            body: out.body,
            changed: out.changed,
            report: out.report.to_json(),
            summary: out.report.summary(),
        }
    }
}

export!(Component);
