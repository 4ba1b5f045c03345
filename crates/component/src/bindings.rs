//! The WIT glue: `wit_bindgen::generate!` writes the canonical-ABI lifting
//! and lowering for `wit/mcp-toon.wit`; the impls below only convert types
//! and call the functions in `super`.

// The generated glue and the `export!` macro are unsafe code by nature
// (raw pointers across the canonical ABI); nothing hand-written here is.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::sync::Arc;

use mcp_toon_engine::config::Settings;

wit_bindgen::generate!({
    path: "../../wit",
    world: "mcp-toon",
});

use exports::mcp_toon::plugin::core::{Guest, GuestProcessor, LocalReply, Processed, Processor};

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

/// The `processor` resource: a validated configuration and the pages of
/// the results it cut.
struct ProcessorImpl {
    settings: Arc<Settings>,
    pages: RefCell<super::Pages>,
}

impl GuestProcessor for ProcessorImpl {
    fn create(config: String) -> Result<Processor, String> {
        let settings = super::configure(&config)?;
        Ok(Processor::new(ProcessorImpl {
            settings,
            pages: RefCell::new(super::Pages::default()),
        }))
    }

    fn process_response(
        &self,
        request_body: Vec<u8>,
        content_type: String,
        response_body: Vec<u8>,
    ) -> Processed {
        let mut pages = self.pages.borrow_mut();
        let out = super::process_with(
            &self.settings,
            &mut pages,
            &request_body,
            &content_type,
            response_body,
        );
        Processed {
            body: out.body,
            changed: out.changed,
            report: out.report.to_json(),
            summary: out.report.summary(),
        }
    }

    fn answer_request(&self, request_body: Vec<u8>, accept: String) -> Option<LocalReply> {
        let mut pages = self.pages.borrow_mut();
        super::answer_request(&self.settings, &mut pages, &request_body, &accept).map(|r| {
            LocalReply {
                status: r.status,
                content_type: r.content_type,
                body: r.body,
                report: r.report.to_json(),
            }
        })
    }
}

export!(Component);
