//! Native tests of the SSE framing core. Helpers here; cases by topic in
//! the files below.

// Tests fail loudly on purpose; the lints guard the request path only.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod grammar;
mod limits;
mod props;
mod recorded;
mod reference;
mod reframe;

use super::{PassReason, SseFramer, Unit};

/// Limit large enough that nothing in a test stream is oversize.
const BIG: usize = 1 << 20;

/// Runs `input` through a new framer in chunks of the given sizes (the rest,
/// if any, as a last chunk), then finishes.
fn frame_chunks(input: &[u8], sizes: &[usize], max: usize) -> Vec<Unit> {
    let mut framer = SseFramer::new(max);
    let mut units = Vec::new();
    let mut rest = input;
    for &n in sizes {
        let (head, tail) = rest.split_at(n.min(rest.len()));
        units.extend(framer.push(head));
        rest = tail;
    }
    units.extend(framer.push(rest));
    units.extend(framer.finish());
    units
}

fn frame(input: &[u8], max: usize) -> Vec<Unit> {
    frame_chunks(input, &[], max)
}

fn concat(units: &[Unit]) -> Vec<u8> {
    units
        .iter()
        .flat_map(|u| u.bytes().iter().copied())
        .collect()
}

/// A unit with the chunking artefacts merged back, for comparing runs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Norm {
    Event {
        raw: Vec<u8>,
        data: Vec<u8>,
        event_type: String,
        id: Option<String>,
    },
    Pass {
        bytes: Vec<u8>,
        reason: PassReason,
    },
}

impl Norm {
    fn bytes_mut(&mut self) -> &mut Vec<u8> {
        match self {
            Norm::Event { raw, .. } => raw,
            Norm::Pass { bytes, .. } => bytes,
        }
    }
}

/// Chunk boundaries show in units in exactly two documented ways: an
/// oversize unit comes in pieces (`Continued` after `TooLarge`), and the LF
/// of a CRLF whose CR closed a unit at a chunk's end comes as a unit of its
/// own. Merging both back must give the same list for every chunking.
fn normalize(units: &[Unit]) -> Vec<Norm> {
    let mut out: Vec<Norm> = Vec::new();
    for unit in units {
        match unit {
            Unit::Passthrough {
                bytes,
                reason: PassReason::Continued,
            } => {
                let last = out.last_mut().expect("Continued follows a unit");
                assert!(
                    matches!(
                        last,
                        Norm::Pass {
                            reason: PassReason::TooLarge,
                            ..
                        }
                    ),
                    "Continued must follow TooLarge"
                );
                last.bytes_mut().extend_from_slice(bytes);
            }
            Unit::Passthrough {
                bytes,
                reason: PassReason::NoEvent,
            } if bytes == b"\n"
                && out
                    .last_mut()
                    .is_some_and(|l| l.bytes_mut().last() == Some(&b'\r')) =>
            {
                if let Some(last) = out.last_mut() {
                    last.bytes_mut().push(b'\n');
                }
            }
            Unit::Passthrough { bytes, reason } => out.push(Norm::Pass {
                bytes: bytes.clone(),
                reason: *reason,
            }),
            Unit::Event(e) => out.push(Norm::Event {
                raw: e.raw().to_vec(),
                data: e.data_bytes().to_vec(),
                event_type: e.event_type().to_owned(),
                id: e.id().map(str::to_owned),
            }),
        }
    }
    out
}

/// (event type, data) of every event, in order.
fn events(units: &[Unit]) -> Vec<(String, String)> {
    units
        .iter()
        .filter_map(|u| match u {
            Unit::Event(e) => Some((
                e.event_type().to_owned(),
                String::from_utf8_lossy(e.data_bytes()).into_owned(),
            )),
            Unit::Passthrough { .. } => None,
        })
        .collect()
}

fn reasons(units: &[Unit]) -> Vec<Option<PassReason>> {
    units
        .iter()
        .map(|u| match u {
            Unit::Event(_) => None,
            Unit::Passthrough { reason, .. } => Some(*reason),
        })
        .collect()
}

/// xorshift64*: a small seeded generator, so every run splits the same way.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// In `1..=max`.
    fn size(&mut self, max: usize) -> usize {
        (self.next() % max as u64) as usize + 1
    }

    /// Chunk sizes covering `len` bytes, drawn from `1..=max`.
    fn chunks(&mut self, len: usize, max: usize) -> Vec<usize> {
        let mut sizes = Vec::new();
        let mut left = len;
        while left > 0 {
            let n = self.size(max).min(left);
            sizes.push(n);
            left -= n;
        }
        sizes
    }
}

/// The core property for one input and limit: for every split into two
/// chunks and `random_runs` random chunkings, the bytes come out exactly and
/// the normalised units equal those of the unsplit run.
fn assert_chunking_invariant(name: &str, input: &[u8], max: usize, random_runs: u64) {
    let whole = frame(input, max);
    assert_eq!(concat(&whole), input, "{name}: unsplit bytes");
    let expected = normalize(&whole);
    for k in 0..=input.len() {
        let units = frame_chunks(input, &[k], max);
        assert_eq!(concat(&units), input, "{name}: bytes, split at {k}");
        assert_eq!(normalize(&units), expected, "{name}: units, split at {k}");
    }
    let mut rng = Rng::new(input.len() as u64 ^ max as u64);
    for run in 0..random_runs {
        let max_chunk = [3, 17, 200, 4096][(run % 4) as usize];
        let sizes = rng.chunks(input.len(), max_chunk);
        let units = frame_chunks(input, &sizes, max);
        assert_eq!(concat(&units), input, "{name}: bytes, chunks {sizes:?}");
        assert_eq!(
            normalize(&units),
            expected,
            "{name}: units, chunks {sizes:?}"
        );
    }
}
