//! Grades your answer in `src/answer.rs`: run `cargo test` in this folder.

#[test]
fn learner_answer() -> Result<(), String> {
    challenge2::grader::grade(&challenge2::answers(), grading::seed()).verdict()
}
