//! `cargo run -p challenge5`: the instructor's demo. Its code is in the library
//! (`src/instructor.rs`), so that the book can quote its output.

use std::process::ExitCode;

fn main() -> ExitCode {
    demo::run_main(|| challenge5::run(std::env::args_os()))
}
