//! Runs the calculator natively on a JSON request read from standard input, and prints its
//! JSON answer: what the page would show, without a browser.
//!
//! With `--check-setups` it answers the setups the browser check compares instead, one line
//! each with its time.
//!
//! `echo '{"width":2000,"layers":1,"batch":32,"card":"15.90GiB"}' | cargo run -p gpumem-calculator --example calculate`

use std::io::Read;
use std::process::ExitCode;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("--check-setups") {
        return check_setups();
    }
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

fn check_setups() -> ExitCode {
    for request in gpumem_calculator::check_setups() {
        let started = std::time::Instant::now();
        let answer: serde_json::Value =
            serde_json::from_str(&gpumem_calculator::calculate(&request)).unwrap_or_default();
        let outcome = match (&answer["error"], &answer["fits"]) {
            (serde_json::Value::String(e), _) => format!("refused: {e}"),
            (_, fits) => format!("fits: {fits}"),
        };
        println!(
            "{:>8.3} s  {request}  {outcome}",
            started.elapsed().as_secs_f64()
        );
    }
    ExitCode::SUCCESS
}
