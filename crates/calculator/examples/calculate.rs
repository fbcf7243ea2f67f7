//! Runs the calculator natively on a JSON request read from standard input, and prints its
//! JSON answer: what the page would show, without a browser.
//!
//! `echo '{"width":2000,"layers":1,"batch":32,"card":"15.90GiB"}' | cargo run -p gpumem-calculator --example calculate`

use std::io::Read;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut request = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut request) {
        eprintln!("error: cannot read the request from standard input: {e}");
        return ExitCode::FAILURE;
    }
    let answer = gpumem_calculator::calculate(&request);
    println!("{answer}");
    if answer.starts_with("{\"error\"") {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
