//! Running a demo as a program in its tests: its output, its JSON, and its refusals.

use std::process::{Command, Output};

/// A demo binary, by path (`env!("CARGO_BIN_EXE_challenge1")` in the crate's tests).
#[derive(Debug, Clone, Copy)]
pub struct Demo(pub &'static str);

impl Demo {
    /// Runs the demo with `args` and collects what it printed.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with_env(args, &[])
    }

    /// Runs the demo with `args` and extra environment variables.
    pub fn run_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(self.0);
        cmd.args(args).envs(env.iter().copied());
        cmd.output().expect("the demo starts")
    }

    /// Runs the demo with `args` and `--json`; it must succeed and print one JSON document.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let o = self.run(&[args, &["--json"]].concat());
        assert!(o.status.success(), "{}", text(&o));
        serde_json::from_slice(&o.stdout).expect("stdout is one JSON document")
    }

    /// Each `(args, expected)`: the demo exits non-zero, says `expected`, and does not panic.
    pub fn assert_refuses(&self, cases: &[(&[&str], &str)]) {
        for (args, expected) in cases {
            assert_refused(&self.run(args), args, expected);
        }
    }
}

/// Refusals of the flags every model demo shares ([`crate::DeviceArgs`], [`crate::ModelArgs`]):
/// `(args, what the error says)`.
pub const SHARED_REFUSALS: &[(&[&str], &str)] = &[
    (&["--hidden", "0"], "at least 1"),
    (&["--batch", "-1"], "cannot be negative"),
    (&["--device-memory", "16XB"], "`XB` is not a unit"),
    (&["--layers", "100000000"], "at most 100000 hidden layers"),
    (&["--backend", "cuda"], "unknown backend"),
    (&["--context-memory", "-1GiB"], "cannot be negative"),
    (
        &["--oom-message", "2.0"],
        "unknown out-of-memory message form",
    ),
];

/// stdout then stderr, as text.
pub fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

/// The run `o` of `args` failed with a message containing `expected`, without a panic.
pub fn assert_refused(o: &Output, args: &[&str], expected: &str) {
    let t = text(o);
    assert!(!o.status.success(), "{args:?} succeeded:\n{t}");
    assert!(t.contains(expected), "{args:?}: {t}");
    assert!(!t.contains("panicked"), "{args:?} panicked:\n{t}");
}
