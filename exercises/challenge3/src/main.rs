//! `cargo run -p challenge3`: the instructor's demo. Its code is in the library
//! (`src/instructor.rs` and the scenarios' modules), so that the book can quote its runs.

use std::process::ExitCode;

fn main() -> ExitCode {
    demo::run_main(|| challenge3::run(std::env::args_os()))
}
