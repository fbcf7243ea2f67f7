//! `cargo run -p memviz -- view FILE [--svg OUT] [--json]` (or `-- FILE …`): a snapshot's summary and its
//! per-tensor timeline; `-- replay FILE …`: its trace on another card (see the library).

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::run_main_with(|| {
        let answer = memviz::answer(std::env::args_os())?;
        print!("{}", answer.text);
        Ok(if answer.does_not_fit {
            ExitCode::from(memviz::DOES_NOT_FIT)
        } else {
            ExitCode::SUCCESS
        })
    })
}
