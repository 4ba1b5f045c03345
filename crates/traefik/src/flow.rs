//! One request and its response, as the two exports see them: the host
//! events of a stream, handed to a [`Driver`] in the order Envoy would
//! (request headers, request body, response headers, response body, the
//! end), each body pulled whole within its export ([`super::pump`]).

use super::host::{Reply, Request, Traefik};
use super::instance::{nanos, Instance, COUNTERS_EVERY};
use super::io::{HeaderKind, HttpWasm, Level, BUFFER_REQUEST, BUFFER_RESPONSE};
use super::pump::pump;
use mcp_toon_engine::driver::{self, Driver};
use mcp_toon_engine::host::{Direction, LogLevel};

/// A request gone on to the next handler, waiting for its response.
pub struct Pending {
    pub driver: Driver,
    pub request: Request,
}

fn host<'a>(
    io: &'a mut dyn HttpWasm,
    instance: &'a mut Instance,
    request: &'a mut Request,
) -> Traefik<'a> {
    Traefik {
        io,
        instance,
        request,
    }
}

/// The driver's timer and the counters' line, due at the first request
/// after their period (http-wasm has no timer).
fn timers(instance: &mut Instance, io: &mut dyn HttpWasm) {
    let now = io.now();
    if let Some((period, due)) = instance.tick {
        if now >= due {
            instance.tick = Some((period, now + period));
            let settings = std::sync::Arc::clone(&instance.settings);
            let mut request = Request::default();
            driver::tick(&mut host(io, instance, &mut request), &settings);
        }
    }
    if now >= instance.counters_due {
        instance.counters_due = now + COUNTERS_EVERY;
        if instance.logs(LogLevel::Info) && !instance.counters.is_empty() {
            io.log(Level::Info, &instance.counters_line());
        }
    }
}

/// The driver told the host at configuration: asks for its timer.
pub fn configured(instance: &mut Instance, io: &mut dyn HttpWasm) {
    let settings = std::sync::Arc::clone(&instance.settings);
    let vm = std::rc::Rc::clone(&instance.vm);
    let mut request = Request::default();
    driver::configured(&mut host(io, instance, &mut request), &settings, &vm);
}

/// `handle_request`: whether the request goes on to the next handler,
/// and what its response will need.
pub fn handle_request(instance: &mut Instance, io: &mut dyn HttpWasm) -> Option<Pending> {
    // Each arrival's nanoseconds make the instance's random bytes less
    // guessable ([`super::random`]).
    instance.random.mix(&nanos(io.now()).to_le_bytes());
    timers(instance, io);
    let mut driver = Driver::new(
        std::sync::Arc::clone(&instance.settings),
        std::rc::Rc::clone(&instance.vm),
    );
    let mut request = Request::default();
    let length = io
        .header_values(HeaderKind::Request, "content-length")
        .first()
        .and_then(|v| v.trim().parse::<usize>().ok());
    // Go drops `transfer-encoding` from a request's headers: a body of
    // unknown length shows no header at all, so only a zero length says
    // there is none.
    let end = length == Some(0);
    driver.request_headers(&mut host(io, instance, &mut request), end);
    if request.reply.is_none() && !end && driver.wants_body(Direction::Request) {
        io.enable_features(BUFFER_REQUEST);
        pump(
            &mut driver,
            io,
            instance,
            &mut request,
            Direction::Request,
            length,
        );
    }
    if let Some(reply) = request.reply.take() {
        send(io, &reply);
        driver.log(&mut host(io, instance, &mut request));
        return None;
    }
    // The host releases a buffered response only at its end: a POST's
    // answer ends with its result (MCP 2025-06-18 "Transports": the server
    // closes the stream once the response is sent), a GET's event stream
    // need not ever end, and is never buffered.
    if !driver.wants_response() {
        // Decided at the request: the driver reads nothing of the response
        // and only sets the summary header, which must be set now, before
        // the next handler sends the (unbuffered) response's headers.
        driver.response_headers(&mut host(io, instance, &mut request), false);
    } else if io.method().eq_ignore_ascii_case("POST") {
        let enabled = io.enable_features(BUFFER_RESPONSE);
        request.buffered_response = enabled & BUFFER_RESPONSE != 0;
    }
    request.after_next = true;
    Some(Pending { driver, request })
}

/// `handle_response`: the next handler's response, buffered or already
/// sent.
pub fn handle_response(instance: &mut Instance, io: &mut dyn HttpWasm, pending: Pending) {
    let Pending {
        mut driver,
        mut request,
    } = pending;
    request.after_next = true;
    if request.buffered_response {
        driver.response_headers(&mut host(io, instance, &mut request), false);
        if driver.wants_body(Direction::Response) {
            pump(
                &mut driver,
                io,
                instance,
                &mut request,
                Direction::Response,
                None,
            );
        }
    }
    driver.log(&mut host(io, instance, &mut request));
}

/// Writes the driver's own reply (the request never reaches the server).
fn send(io: &mut dyn HttpWasm, reply: &Reply) {
    io.set_status(reply.status);
    for (name, value) in &reply.headers {
        io.set_header(HeaderKind::Response, name, value);
    }
    io.set_header(
        HeaderKind::Response,
        "content-length",
        &reply.body.len().to_string(),
    );
    io.write_body(super::io::BodyKind::Response, &reply.body);
}
