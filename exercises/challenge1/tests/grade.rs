//! Grades your answer in `src/answer.rs`: run `cargo test` in this folder.

/// Returns an error (not a panic) when a check misses, so the report is all you see.
#[test]
fn learner_answer() -> Result<(), String> {
    let report = challenge1::grader::grade(&challenge1::answers(), grading::seed());
    println!("{report}");
    if report.passed() {
        Ok(())
    } else {
        Err(format!("{} — see the report above", report.summary()))
    }
}
