//! `cargo run -p memviz -- view FILE [--svg OUT] [--json]` (or `-- FILE …`): a snapshot's summary and its
//! per-tensor timeline; `-- replay FILE …`: its trace on another card (see the library).

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::run_main(|| {
        print!("{}", memviz::run(std::env::args_os())?);
        Ok(())
    })
}
