//! `benches/core_time.rs`, unchanged, as a wasm32-wasip1 program.

#[path = "../../core_time.rs"]
mod core_time;

fn main() {
    core_time::main();
}
