//! The instructor's demo, run as a program: defaults, JSON, help and bad input.

use cli::testing::{Demo, SHARED_REFUSALS, text};
use serde_json::Value;

const DEMO: Demo = Demo(env!("CARGO_BIN_EXE_challenge5"));

fn cells(v: &Value, network: usize) -> &Vec<Value> {
    v["networks"][network]["cells"].as_array().unwrap()
}

fn cell<'a>(v: &'a Value, network: usize, scheme: &str, cards: u64) -> &'a Value {
    cells(v, network)
        .iter()
        .find(|c| c["scheme"] == scheme && c["cards"] == cards)
        .unwrap_or_else(|| panic!("no cell {scheme} on {cards}"))
}

fn fewest(v: &Value, network: usize, scheme: &str) -> Value {
    v["networks"][network]["fewest_cards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["scheme"] == scheme)
        .unwrap()["cards"]
        .clone()
}

/// The defaults: Challenge 2's network one layer too deep, SGD then Adam, every scheme on
/// 1, 2, 4 and 8 cards; no scheme fits on one card, DDP fits on none, ZeRO-3 on two.
#[test]
fn the_defaults_show_that_ddp_adds_no_memory_and_sharding_does() {
    let v = DEMO.json(&[]);
    let schemes = gpumem::parallel::Scheme::ALL.len();
    for network in 0..2 {
        assert_eq!(cells(&v, network).len(), schemes * 4);
        let deepest = v["networks"][network]["deepest_on_one_card"]
            .as_u64()
            .unwrap();
        assert_eq!(v["networks"][network]["config"]["layers"], deepest + 1);
        for c in cells(&v, network).iter().filter(|c| c["cards"] == 1) {
            assert_eq!(c["fits"], false, "one layer too deep for one card: {c}");
        }
        let ddp: Vec<u64> = [1, 2, 4, 8]
            .map(|n| {
                cell(&v, network, "ddp", n)["peak_allocated"]
                    .as_u64()
                    .unwrap()
            })
            .to_vec();
        let spread = ddp.iter().max().unwrap() - ddp.iter().min().unwrap();
        assert!(spread * 100 < ddp[0], "DDP's card barely changes: {ddp:?}");
        assert_eq!(fewest(&v, network, "ddp"), Value::Null);
        assert_eq!(fewest(&v, network, "zero3"), 2);
        let zero3 = |n| {
            cell(&v, network, "zero3", n)["peak_reserved"]
                .as_u64()
                .unwrap()
        };
        assert!(
            zero3(2) * 2 < zero3(1) + zero3(1) / 10,
            "{:?}",
            [zero3(1), zero3(2)]
        );
    }
    assert_eq!(v["networks"][1]["config"]["optimizer"]["name"], "adam");
    let t = text(&DEMO.run(&[]));
    for part in [
        "One card fits",
        "first to run out",
        "card 0 (",
        "out of memory. Tried to allocate",
        "The fewest cards each scheme needs:",
        "none of 1 to 8",
    ] {
        assert!(t.contains(part), "`{part}` missing:\n{t}");
    }
}

#[test]
fn flags_choose_the_schemes_and_the_group_sizes() {
    let v = DEMO.json(&[
        "--scheme",
        "zero3,ddp",
        "--cards",
        "4,2,4",
        "--optimizer",
        "adam",
    ]);
    let got: Vec<(String, u64)> = cells(&v, 0)
        .iter()
        .map(|c| {
            (
                c["scheme"].as_str().unwrap().to_string(),
                c["cards"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = [("ddp", 2), ("ddp", 4), ("zero3", 2), ("zero3", 4)]
        .map(|(s, n)| (s.to_string(), n))
        .to_vec();
    assert_eq!(got, want);
    assert!(
        v["networks"][1].is_null(),
        "an Adam network has no Adam variant"
    );
    let one = DEMO.json(&["--scheme", "fsdp", "--scheme", "zero1", "--cards", "2"]);
    assert_eq!(cells(&one, 0).len(), 2);
    assert_eq!(
        one["pipeline_bubble"],
        serde_json::json!([]),
        "no pipeline asked for"
    );
}

/// With a pipeline asked for, the bubble on each group size: none on one card, then a share
/// that grows with the cards.
#[test]
fn a_pipeline_shows_its_bubble() {
    let v = DEMO.json(&["--scheme", "gpipe", "--cards", "1,2,8"]);
    let shares: Vec<f64> = v["pipeline_bubble"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["idle_share"].as_f64().unwrap())
        .collect();
    assert_eq!(shares.len(), 3);
    assert_eq!(shares[0], 0.0);
    assert!(
        0.0 < shares[1] && shares[1] < shares[2] && shares[2] < 1.0,
        "{shares:?}"
    );
}

#[test]
fn help_shows_the_defaults() {
    let t = text(&DEMO.run(&["--help"]));
    for part in [
        "[default: 1,2,4,8]",
        "[default: 8]",
        "[default: 5000]",
        "--scheme",
        "--json",
    ] {
        assert!(t.contains(part), "`{part}` missing:\n{t}");
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    DEMO.assert_refuses(SHARED_REFUSALS);
    DEMO.assert_refuses(&[
        (&["--cards", "0"], "at least 1"),
        (&["--cards", "2,x"], "not a whole number"),
        (&["--max-cards", "0"], "at least 1"),
        (
            &["--scheme", "tensor-parallel"],
            "unknown scheme `tensor-parallel`",
        ),
        (
            &["--cards", "64", "--scheme", "ddp"],
            "cannot give each of 64 cards a row",
        ),
        (
            &[
                "--cards",
                "200",
                "--scheme",
                "pipeline-gpipe",
                "--batch",
                "1000",
            ],
            "needs at least 200 layers",
        ),
        (
            &[
                "--device-memory",
                "1GiB",
                "--layers",
                "1",
                "--scheme",
                "ddp",
            ],
            "every depth up to --layers 1",
        ),
        (&["--device-memory", "native"], "need a size"),
    ]);
}

/// A card smaller than one layer of 5000 (ZeRO-3 builds the whole model on each card first),
/// so no scheme fits on up to --max-cards: the table is printed, then the error.
#[test]
fn a_card_too_small_for_every_scheme_is_refused_after_the_table() {
    let args = [
        "--device-memory",
        "64MiB",
        "--max-cards",
        "2",
        "--cards",
        "1,2",
    ];
    let o = DEMO.run(&args);
    cli::testing::assert_refused(&o, &args, "no scheme fits these networks on up to 2 cards");
    assert!(text(&o).contains("first to run out"), "{}", text(&o));
}
