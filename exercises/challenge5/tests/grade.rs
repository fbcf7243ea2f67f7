//! Grades your answer in `src/answer.rs`: run `cargo test` in this folder.

#[test]
fn learner_answer() -> Result<(), String> {
    challenge5::grader::grade(&challenge5::answers(), grading::seed()).verdict()
}
