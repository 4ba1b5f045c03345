//! What a host that pulls whole bodies in pieces (http-wasm) asks the
//! driver: whether the response is worth buffering, and whether the rest of
//! a body is still wanted.

use super::{call_answered, json_post, settings, table, CALL};
use crate::driver::{Driver, Vm};
use crate::host::Direction;

fn driver(config: &str) -> Driver {
    Driver::new(settings(config), std::rc::Rc::new(Vm::default()))
}

/// A tool call's response is wanted; a listing nothing rewrites, and a
/// call whose policy changes nothing, are decided at the request.
#[test]
fn the_response_is_wanted_only_where_it_can_change() {
    let mut d = driver("");
    let mut host = json_post();
    host.headers(&mut d, Direction::Request, false);
    host.body(&mut d, Direction::Request, CALL, true);
    assert!(d.wants_response());

    let mut d = driver("");
    let mut host = json_post();
    host.headers(&mut d, Direction::Request, false);
    let list = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    host.body(&mut d, Direction::Request, list, true);
    assert!(!d.wants_response());

    let mut d = driver(r#"{"toon":{"mode":"off"},"clean":{"compact_json":false}}"#);
    let mut host = json_post();
    host.headers(&mut d, Direction::Request, false);
    host.body(&mut d, Direction::Request, CALL, true);
    assert!(!d.wants_response());
}

/// A JSON body is wanted piece by piece until it ends; one that passes
/// `max_response_bytes` is given up on, and the rest need not be read.
#[test]
fn a_body_is_wanted_until_the_core_gives_it_up() {
    let body = table();
    let (first, rest) = body.split_at(body.len() / 2);
    let mut d = driver("");
    let mut host = json_post();
    call_answered(&mut d, &mut host);
    assert!(d.wants_body(Direction::Response));
    host.body(&mut d, Direction::Response, first, false);
    assert!(d.wants_body(Direction::Response));
    host.body(&mut d, Direction::Response, rest, true);
    assert!(!d.wants_body(Direction::Response));
    assert_ne!(host.sent(Direction::Response), body.as_slice());

    let mut d = driver(r#"{"max_response_bytes":1024}"#);
    let mut host = json_post();
    call_answered(&mut d, &mut host);
    let big = [b' '; 2048];
    host.body(&mut d, Direction::Response, &big, false);
    assert!(!d.wants_body(Direction::Response));
    // What came so far went on as it came.
    assert_eq!(host.sent(Direction::Response), &big[..]);
}
