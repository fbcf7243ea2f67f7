//! When the `proofs` feature is on, hands `tests/challengeN.rs` the shipped stubs (git's
//! `HEAD` version of each `exercises/challengeN/src/answer.rs`), never a learner's edited copy.

fn main() {
    shipped::write_stub_modules(&[
        ("challenge1", "../../exercises/challenge1/src/answer.rs"),
        ("challenge2", "../../exercises/challenge2/src/answer.rs"),
        ("challenge3", "../../exercises/challenge3/src/answer.rs"),
        ("challenge4", "../../exercises/challenge4/src/answer.rs"),
        ("challenge5", "../../exercises/challenge5/src/answer.rs"),
    ]);
}
