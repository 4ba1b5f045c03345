//! A body the host buffered, pulled through the driver in pieces.
//!
//! Each piece read with `read_body` is handed to the driver as a body
//! callback, as Envoy hands a chunk; what the driver lets go is what the
//! message carries on. A response is written only if that differs from
//! what the server sent (the first `write_body` replaces the buffered
//! body, later ones append): until the first difference the bytes let go
//! are only compared, and once the driver wants no more of an unchanged
//! body the rest is not even read. A request is always written back:
//! http-wasm-host-go's buffering reader keeps only the reads that end with
//! an error (`handler/nethttp/buffer.go`, v0.7.0, which Traefik 3.7
//! ships), so a request body the guest read and did not write would reach
//! the server cut short (measured: a 100 KB body, Traefik answered 500).

use super::host::{Request, Traefik};
use super::instance::Instance;
use super::io::{BodyKind, HttpWasm};
use mcp_toon_engine::driver::Driver;
use mcp_toon_engine::host::{Action, Direction};

/// Bytes pulled per `read_body`.
pub const PIECE: usize = 64 * 1024;
/// Unchanged bytes of a response held for comparison before they are
/// written on (bounding what a long unchanged event stream costs the
/// instance's memory, which never shrinks).
pub const HELD_UNCHANGED: usize = 1024 * 1024;

/// How the bytes the driver lets go reach the host.
enum Sink {
    /// Compared with what came in, written only once they differ.
    Comparing { input: Vec<u8>, output: Vec<u8> },
    /// Written as they go; `total` bytes so far.
    Writing { total: usize },
}

impl Sink {
    fn write(io: &mut dyn HttpWasm, kind: BodyKind, bytes: &[u8], total: &mut usize) {
        if !bytes.is_empty() {
            io.write_body(kind, bytes);
            *total = total.saturating_add(bytes.len());
        }
    }

    /// Bytes the driver let go.
    fn send(&mut self, io: &mut dyn HttpWasm, kind: BodyKind, out: &[u8]) {
        match self {
            Sink::Writing { total } => Sink::write(io, kind, out, total),
            Sink::Comparing { input, output } => {
                let at = output.len();
                let same = input.get(at..at.saturating_add(out.len())) == Some(out);
                output.extend_from_slice(out);
                if !same || output.len() > HELD_UNCHANGED {
                    let mut total = 0;
                    Sink::write(io, kind, output, &mut total);
                    *self = Sink::Writing { total };
                }
            }
        }
    }

    /// Nothing differs so far, and nothing waits to be compared.
    fn unchanged(&self) -> bool {
        matches!(self, Sink::Comparing { input, output } if input.len() == output.len())
    }
}

/// What became of a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pumped {
    /// The message carries on with what the driver let go.
    Done,
    /// The driver answered the request itself (a page call).
    Replied,
}

/// Pulls `direction`'s body through the driver. `length`: the request's
/// `content-length`, which the host keeps for the server whatever the
/// body becomes (Go's `Request.ContentLength`): a request the driver
/// shortened is padded to it with JSON whitespace (RFC 8259 §2: `ws` may
/// follow a value), as the only rewrites of a request take an argument out
/// of its JSON.
pub fn pump(
    driver: &mut Driver,
    io: &mut dyn HttpWasm,
    instance: &mut Instance,
    request: &mut Request,
    direction: Direction,
    length: Option<usize>,
) -> Pumped {
    let kind = match direction {
        Direction::Request => BodyKind::Request,
        Direction::Response => BodyKind::Response,
    };
    let mut sink = match direction {
        Direction::Request => Sink::Writing { total: 0 },
        Direction::Response => Sink::Comparing {
            input: Vec::new(),
            output: Vec::new(),
        },
    };
    loop {
        let (piece, end) = io.read_body(kind, PIECE);
        if let Sink::Comparing { input, .. } = &mut sink {
            input.extend_from_slice(&piece);
        }
        request.buffer(direction).extend_from_slice(&piece);
        let size = request.buffer(direction).len();
        let action = {
            let mut host = Traefik {
                io: &mut *io,
                instance: &mut *instance,
                request: &mut *request,
            };
            match direction {
                Direction::Request => driver.request_body(&mut host, size, end),
                Direction::Response => driver.response_body(&mut host, size, end),
            }
        };
        if request.reply.is_some() {
            return Pumped::Replied;
        }
        if action == Action::Continue || end {
            // At the end nothing can wait: what is still held goes too.
            let out = std::mem::take(request.buffer(direction));
            sink.send(io, kind, &out);
        }
        if end {
            break;
        }
        if sink.unchanged() && request.buffer(direction).is_empty() && !driver.wants_body(direction)
        {
            // The rest stays as the host buffered it, unread.
            return Pumped::Done;
        }
    }
    match sink {
        Sink::Comparing { input, output } if input != output => {
            io.write_body(kind, &output);
        }
        Sink::Comparing { .. } => {}
        Sink::Writing { total } => {
            if let Some(missing) = length.and_then(|l| l.checked_sub(total)) {
                if missing > 0 {
                    io.write_body(kind, &vec![b' '; missing]);
                }
            }
        }
    }
    Pumped::Done
}
