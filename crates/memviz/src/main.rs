//! `cargo run -p memviz -- FILE [--svg OUT] [--json]`: a memory snapshot's summary and its
//! per-tensor timeline (see the library).

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::run_main(|| {
        print!("{}", memviz::run(std::env::args_os())?);
        Ok(())
    })
}
