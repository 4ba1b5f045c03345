//! The component's functions compiled natively, for `tests/component/`: reads
//! a batch of cases as JSON on standard input and prints what the native
//! core answers, in the shape the component host test compares with what the
//! `wasm32-wasip2` component answers for the same cases.
//!
//! Input:  `{"configs":[text], "exchanges":[{"config":i,"request":[u8],
//!          "content_type":text,"response":[u8]}], "encode":[text],
//!          "decode":[text], "project":[[json, expression, max]]}`
//! Output: `{"configs":[{"ok":null}|{"err":text}], "exchanges":[{"body":[u8],
//!          "changed":bool,"report":text,"summary":text}|{"err":text}],
//!          "encode":[{"ok":text}|{"err":text}], "decode":[...],
//!          "project":[...]}`

use std::io::Read;
use std::process::ExitCode;

use mcp_toon_component as component;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
struct Cases {
    configs: Vec<String>,
    exchanges: Vec<Exchange>,
    encode: Vec<String>,
    decode: Vec<String>,
    #[serde(default)]
    project: Vec<(String, String, u32)>,
}

#[derive(Deserialize)]
struct Exchange {
    config: usize,
    request: Vec<u8>,
    content_type: String,
    response: Vec<u8>,
}

fn result(r: Result<String, String>) -> Value {
    match r {
        Ok(v) => json!({ "ok": v }),
        Err(e) => json!({ "err": e }),
    }
}

fn main() -> ExitCode {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("component-native: cannot read standard input: {e}");
        return ExitCode::FAILURE;
    }
    let cases: Cases = match serde_json::from_str(&input) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("component-native: bad cases: {e}");
            return ExitCode::FAILURE;
        }
    };
    let settings: Vec<_> = cases
        .configs
        .iter()
        .map(|c| component::configure(c))
        .collect();
    let configs: Vec<Value> = settings
        .iter()
        .map(|s| match s {
            Ok(_) => json!({ "ok": null }),
            Err(e) => json!({ "err": e }),
        })
        .collect();
    let exchanges: Vec<Value> = cases
        .exchanges
        .into_iter()
        .map(|x| match settings.get(x.config) {
            Some(Ok(s)) => {
                let out = component::process(s, &x.request, &x.content_type, x.response);
                json!({
                    "body": out.body,
                    "changed": out.changed,
                    "report": out.report.to_json(),
                    "summary": out.report.summary(),
                })
            }
            _ => json!({ "err": format!("config {} is not usable", x.config) }),
        })
        .collect();
    let encode: Vec<Value> = cases
        .encode
        .iter()
        .map(|t| result(component::toon_encode(t)))
        .collect();
    let decode: Vec<Value> = cases
        .decode
        .iter()
        .map(|t| result(component::toon_decode(t)))
        .collect();
    let project: Vec<Value> = cases
        .project
        .iter()
        .map(|(j, e, max)| result(component::project_query(j, e, *max)))
        .collect();
    let out = json!({
        "configs": configs,
        "exchanges": exchanges,
        "encode": encode,
        "decode": decode,
        "project": project,
    });
    println!("{out}");
    ExitCode::SUCCESS
}
