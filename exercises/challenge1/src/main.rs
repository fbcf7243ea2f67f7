//! `cargo run -p challenge1`: the instructor's demo. Its code is in the library
//! (`src/instructor.rs`), so that the book can quote its output.

use std::process::ExitCode;

fn main() -> ExitCode {
    demo::run_main(|| challenge1::run(std::env::args_os()))
}
