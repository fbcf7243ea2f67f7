//! `cargo run -p challenge2`: the instructor's demo. Its code is the `demos` library
//! (`crates/demos/src/challenge2.rs`), so that the book can quote its output.

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::run_main(|| demos::challenge2::run(std::env::args_os()))
}
