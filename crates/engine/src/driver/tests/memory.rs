//! The VM's memory budget across streams ([`Vm`]), and the records of
//! responses that pass whole, through the driver on the scripted host.

use std::rc::Rc;

use serde_json::Value;

use super::{json_post, settings, table, CALL};
use crate::config::VM_WORK_FACTOR;
use crate::driver::{Driver, MemoryHost, Vm, RECORD_PROPERTY, VM_HELD_BYTES, VM_HELD_BYTES_MAX};
use crate::host::Direction;

/// A stream that sent [`CALL`], its response not begun.
fn called(vm: &Rc<Vm>, config: &str) -> (Driver, MemoryHost) {
    let mut driver = Driver::new(settings(config), Rc::clone(vm));
    let mut host = json_post();
    host.headers(&mut driver, Direction::Request, false);
    host.body(&mut driver, Direction::Request, CALL, true);
    (driver, host)
}

/// The JSON response headers (`length`: its announced `content-length`).
fn respond(driver: &mut Driver, host: &mut MemoryHost, length: Option<usize>) {
    let length = length.map(|n| n.to_string());
    let mut headers = vec![(":status", "200"), ("content-type", "application/json")];
    if let Some(n) = length.as_deref() {
        headers.push(("content-length", n));
    }
    host.respond(&headers);
    host.headers(driver, Direction::Response, false);
}

/// A stream of [`CALL`] answered with JSON headers, its body not yet sent.
fn answered(vm: &Rc<Vm>, config: &str, length: Option<usize>) -> (Driver, MemoryHost) {
    let (mut driver, mut host) = called(vm, config);
    respond(&mut driver, &mut host, length);
    (driver, host)
}

fn record(host: &MemoryHost) -> Option<Value> {
    host.properties
        .get(RECORD_PROPERTY)
        .map(|r| serde_json::from_slice(r).unwrap())
}

/// The room of one stream: alone it may hold what leaves its own working
/// memory room (a twelfth of the budget); beside a larger stream, what that
/// one's working memory leaves.
#[test]
fn a_streams_room_leaves_the_largest_streams_working_memory() {
    let k = VM_WORK_FACTOR;
    // Past a (k + 1)th of this budget, another stream is the largest.
    let budget = 100 * k * (k + 1);
    let vm = Vm::default();
    assert_eq!(vm.room(0, budget), budget / k);
    vm.charge(0, 50 * k);
    // At least the other: its own working memory bounds it.
    assert_eq!(vm.room(0, budget), (budget - 50 * k) / k);
    vm.charge(50 * k, 101 * k);
    // Below the other: what the other's working memory leaves.
    assert_eq!(vm.room(0, budget), budget - k * 101 * k);
    // Its own charge is not counted against it.
    assert_eq!(vm.room(101 * k, budget), budget / k);
    vm.charge(0, 100);
    assert_eq!(vm.room(100, budget), budget - k * 101 * k);
    assert_eq!(vm.reserved(), 101 * k + 100 + (k - 1) * 101 * k);
    // A budget the others already fill leaves nothing.
    assert_eq!(vm.room(0, 2000), 0);
    vm.charge(101 * k, 0);
    vm.charge(100, 0);
    assert_eq!((vm.held.get(), vm.reserved()), (0, 0));
}

/// Two streams on one VM: the first holds a body of exactly the room it
/// may have; the second, whose announced body would pass the budget, is
/// not read — it arrives as sent, counted, its record naming its call and
/// its size — and neither loses a byte. The held gauges show the ledger,
/// never past the budget, and back to zero at the end.
#[test]
fn a_stream_past_the_vms_budget_passes_whole_and_the_others_go_on() {
    let body = table();
    let n = body.len();
    let budget = n * VM_WORK_FACTOR;
    let config = format!(r#"{{"max_vm_held_bytes":{}}}"#, budget.max(1 << 20));
    // A budget of at least 1 MiB (the least allowed): the first stream's
    // body pads out to take exactly its room.
    let budget = budget.max(1 << 20);
    let room = budget / VM_WORK_FACTOR;
    // One byte past the room: passed at its headers, nothing held.
    let vm = Rc::new(Vm::default());
    let (mut over, mut over_host) = answered(&vm, &config, Some(room + 1));
    assert_eq!(vm.held.get(), 0);
    let mut padded = table();
    padded.resize(room + 1, b' ');
    over_host.body(&mut over, Direction::Response, &padded, true);
    assert_eq!(over_host.sent(Direction::Response), padded);
    over_host.end(&mut over);
    let r = record(&over_host).unwrap();
    assert_eq!(r["decisions"][0]["reason"], "vm_memory_budget");
    // Exactly the room: held from its headers on. The second stream's
    // request was read before; its response, past the budget now, is not.
    let vm = Rc::new(Vm::default());
    let (mut second, mut second_host) = called(&vm, &config);
    let (mut first, mut first_host) = answered(&vm, &config, Some(room));
    let held = vm.held.get();
    assert_eq!(held, room, "held from its headers on");
    respond(&mut second, &mut second_host, Some(n));
    second_host.body(&mut second, Direction::Response, &body, true);
    second_host.end(&mut second);
    assert_eq!(second_host.sent(Direction::Response), body, "as sent");
    let r = record(&second_host).unwrap();
    let d = &r["decisions"][0];
    assert_eq!(d["reason"], "vm_memory_budget", "{r}");
    assert_eq!(
        (d["id"].as_str(), d["tool"].as_str()),
        (Some("1"), Some("rows"))
    );
    assert_eq!(d["bytes_before"].as_u64(), Some(n as u64));
    assert_eq!(vm.held.get(), held, "the second gave back what it took");
    // The first, exactly at its room, is read: a table padded with spaces
    // after its value, which the stages leave as they came.
    let mut padded = body.clone();
    padded.resize(room, b' ');
    first_host.body(&mut first, Direction::Response, &padded, true);
    first_host.end(&mut first);
    let sent = first_host.sent(Direction::Response);
    assert!(sent.len() < padded.len(), "encoded");
    assert!(record(&first_host).unwrap().to_string().contains("encoded"));
    assert_eq!(vm.held.get(), 0);
    assert_eq!(first_host.gauges.get(VM_HELD_BYTES), Some(&0));
    let peak = first_host.gauges.get(VM_HELD_BYTES_MAX).copied().unwrap();
    assert!(peak <= budget as u64, "{peak} > {budget}");
    assert_eq!(peak, (room * VM_WORK_FACTOR) as u64);
}

/// A chunked body grows until the next chunk would pass the budget; then
/// what it held goes on, followed by the rest, unread.
#[test]
fn a_chunked_body_past_the_budget_goes_on_as_it_came() {
    let body = table();
    let vm = Rc::new(Vm::default());
    // Another stream holds so much of the budget (1 MiB) that, beside its
    // working memory, half of this body is left.
    let budget = 1 << 20;
    let other = (budget - body.len() / 2) / VM_WORK_FACTOR;
    vm.charge(0, other);
    let config = r#"{"max_vm_held_bytes":1048576}"#;
    let room = vm.room(0, budget);
    assert!(room < body.len() && room > body.len() / 3, "{room}");
    let (mut driver, mut host) = answered(&vm, config, None);
    for chunk in body.chunks(1000) {
        host.body(&mut driver, Direction::Response, chunk, false);
        assert!(vm.held.get() - other <= room, "{}", vm.held.get());
    }
    host.body(&mut driver, Direction::Response, b"", true);
    host.end(&mut driver);
    assert_eq!(host.sent(Direction::Response), body);
    let r = record(&host).unwrap();
    assert_eq!(r["decisions"][0]["reason"], "vm_memory_budget", "{r}");
    assert_eq!(
        r["decisions"][0]["bytes_before"].as_u64(),
        Some(body.len() as u64)
    );
    assert_eq!(vm.held.get(), other);
}

/// A response too large, answered with no `content-length`: its record is
/// set once it ended, naming the call and the bytes that passed.
#[test]
fn the_record_of_a_response_too_large_waits_for_its_end() {
    let body = table();
    let vm = Rc::new(Vm::default());
    let (mut driver, mut host) = answered(&vm, r#"{"max_response_bytes":1024}"#, None);
    let chunks: Vec<&[u8]> = body.chunks(700).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        assert!(record(&host).is_none(), "not before its end");
        host.body(
            &mut driver,
            Direction::Response,
            chunk,
            i + 1 == chunks.len(),
        );
    }
    let r = record(&host).expect("set at the last chunk, before the stream is logged");
    let d = &r["decisions"][0];
    assert_eq!(d["reason"], "response_too_large");
    assert_eq!(
        (d["id"].as_str(), d["tool"].as_str()),
        (Some("1"), Some("rows"))
    );
    assert_eq!(d["bytes_before"].as_u64(), Some(body.len() as u64));
    assert_eq!(host.sent(Direction::Response), body);
}

/// A `GET` answered 405 leaves no record (it concerns no tool call).
#[test]
fn a_get_answered_405_has_no_record() {
    let vm = Rc::new(Vm::default());
    let mut driver = Driver::new(settings("{}"), Rc::clone(&vm));
    let mut host = MemoryHost::default();
    host.set_request_header(":method", "GET");
    host.set_request_header(":path", "/mcp");
    host.set_request_header("accept", "text/event-stream");
    host.headers(&mut driver, Direction::Request, true);
    host.respond(&[
        (":status", "405"),
        ("content-type", "text/plain"),
        ("content-length", "18"),
    ]);
    host.headers(&mut driver, Direction::Response, false);
    host.body(
        &mut driver,
        Direction::Response,
        b"Method Not Allowed",
        true,
    );
    host.end(&mut driver);
    assert_eq!(record(&host), None);
    assert_eq!(
        host.counters.get("mcp_toon_passthrough_http_status"),
        Some(&1)
    );
}
