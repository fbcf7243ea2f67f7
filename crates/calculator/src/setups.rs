//! The setups on which the committed WebAssembly module must answer exactly what this crate
//! answers natively (the browser check runs them in the page): fitting, out-of-memory and
//! refused ones, over every choice the form offers.

use crate::request::{BatchRows, OptimizerChoice, Request, WholeSet};
use gpumem::alloc::OomMessage;
use gpumem::mlp::{Checkpointing, Precision};

/// At least this many setups are compared.
pub const AT_LEAST: usize = 50;

/// Requests as JSON texts, the form the page sends.
pub fn check_setups() -> Vec<String> {
    let mut out: Vec<String> = grid()
        .iter()
        .map(|r| serde_json::to_string(r).unwrap_or_default())
        .collect();
    out.extend(refused().into_iter().map(String::from));
    out
}

/// Widths, depths, batches, optimizers, precisions, strategies and cards, crossed sparsely
/// so every choice meets fitting and failing setups.
fn grid() -> Vec<Request> {
    let widths = [5, 100, 2000, 5000];
    let layers = [1, 3, 8];
    let batches = [
        BatchRows::Rows(1),
        BatchRows::Rows(32),
        BatchRows::Rows(4096),
        BatchRows::Whole(WholeSet::All),
    ];
    let optimizers = [
        OptimizerChoice::Sgd,
        OptimizerChoice::SgdMomentum,
        OptimizerChoice::Adam,
    ];
    let precisions = [Precision::Float32, Precision::Mixed, Precision::Float64];
    let checkpointing = [
        Checkpointing::Off,
        Checkpointing::Sqrt,
        Checkpointing::Every(2),
    ];
    let cards = ["15.90GiB", "1GiB", "80GiB", "64MiB", "256MB"];
    let mut out = Vec::new();
    let mut i = 0usize;
    for &width in &widths {
        for &depth in &layers {
            for &batch in &batches {
                let mut r = Request::lesson(width, depth, batch);
                r.optimizer = optimizers[i % optimizers.len()];
                r.precision = precisions[(i / 3) % precisions.len()];
                r.checkpointing = checkpointing[(i / 2) % checkpointing.len()];
                r.accumulation = [1, 1, 4, 3][i % 4];
                r.relu_inplace = i.is_multiple_of(5);
                r.card = cards[i % cards.len()].to_string();
                if i % 3 == 1 {
                    r.preset = gpumem::lesson::Card::Lesson;
                }
                r.oom_message = if i.is_multiple_of(2) {
                    OomMessage::Lesson
                } else {
                    OomMessage::Current
                };
                out.push(r);
                i += 1;
            }
        }
    }
    out
}

/// Inputs the calculator must refuse, each with its own reason.
fn refused() -> [&'static str; 8] {
    [
        r#"{"width":0,"layers":1,"batch":32,"card":"16GiB"}"#,
        r#"{"width":2000,"layers":1,"batch":0,"card":"16GiB"}"#,
        r#"{"width":2000,"layers":1,"batch":32,"card":"-1GiB"}"#,
        r#"{"width":2000,"layers":1,"batch":32,"card":"16 parsecs"}"#,
        r#"{"width":9007199254740993,"layers":1,"batch":32,"card":"16GiB"}"#,
        r#"{"width":1099511627776,"layers":1,"batch":32,"card":"16GiB"}"#,
        r#"{"width":2000,"layers":2.5,"batch":32,"card":"16GiB"}"#,
        r#"{"width":2000,"layers":1,"batch":32,"card":"16GiB","colour":"red"}"#,
    ]
}
