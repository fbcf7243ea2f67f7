//! The book's figures, quoted numbers and demo transcripts, computed from the engine and the
//! demos' own code (the challenge crates, as libraries) — never typed by hand.
//!
//! [`ARTIFACTS`] is the one registry: each entry names a file under the book's `src/` and the
//! function that renders its contents. The binary (`cargo run -p figures`) writes them all;
//! the staleness test renders them in memory and compares with the committed files, so a
//! change to the engine that moves a number fails `cargo test` until they are regenerated.
//!
//! Everything is computed on the `plan` backing (allocations without kernels) with fixed
//! seeds, so the output is the same, byte for byte, on every machine — except Challenge 4's
//! times, which are measured by `cargo run --release -p figures -- --measure` and rendered
//! from the record it keeps ([`measured`]).

pub mod alts;
pub mod artifacts;
pub mod book;
pub mod charts;
pub mod data;
pub mod epochs;
pub mod files;
pub mod fragmented;
pub mod measured;
pub mod pages;
pub mod quizzes;
pub mod reading;
pub mod schemes;
pub mod session;
pub mod snapshots;
pub mod spoilers;
pub mod tape;

/// The look of every chart, shared with the demos' charts (`crates/charts`).
pub use ::charts::style;

pub use artifacts::{ARTIFACTS, Artifact};
