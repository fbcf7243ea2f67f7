//! `cargo run -p challenge1`: the instructor's demo. Its code is the `demos` library
//! (`crates/demos/src/challenge1.rs`), so that the book can quote its output.

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::run_main(|| demos::challenge1::run(std::env::args_os()))
}
