//! `cargo run -p challenge4`: the instructor's demo. Its code is in the library
//! (`src/instructor.rs`, `src/strategies.rs`), so that the book can quote its plans.

use std::process::ExitCode;

fn main() -> ExitCode {
    demo::run_main(|| challenge4::run(std::env::args_os()))
}
