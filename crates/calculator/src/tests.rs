use super::*;
use gpumem::data::LESSON_TRAINING_EVENTS;
use gpumem::lesson::planning_device;
use gpumem::measure::measure_step;
use serde_json::Value;

fn answer(request: &Request) -> Value {
    let json = serde_json::to_string(request).expect("a request prints");
    serde_json::from_str(&calculate(&json)).expect("the answer is JSON")
}

fn error_of(json: &str) -> String {
    let v: Value = serde_json::from_str(&calculate(json)).expect("the answer is JSON");
    v["error"].as_str().unwrap_or_default().to_string()
}

#[test]
fn the_lessons_full_batch_does_not_fit_and_prints_the_demos_message() {
    let request = Request::lesson(2000, 1, BatchRows::Whole(request::WholeSet::All));
    let v = answer(&request);
    assert_eq!(v["rows"], LESSON_TRAINING_EVENTS);
    assert_eq!(v["fits"], false);
    // The same setup measured the way the demos measure it.
    let config = request.config();
    let capacity = request.capacity().expect("the lesson's card parses");
    let demo = measure_step(
        &planning_device(capacity),
        &config,
        LESSON_TRAINING_EVENTS,
        0,
    )
    .expect("measures");
    let message = demo.oom.expect("the demo runs out too").to_string();
    assert_eq!(v["oom_message"], message.as_str());
    assert!(message.contains("Tried to allocate"), "{message}");
}

#[test]
fn a_small_batch_fits_and_its_searches_are_the_boundaries() {
    let request = Request::lesson(2000, 1, BatchRows::Rows(32));
    let v = answer(&request);
    assert_eq!(v["fits"], true, "{v}");
    assert!(v["oom_message"].is_null());
    let capacity = request.capacity().expect("parses");
    let options = planning_device(capacity);
    let config = request.config();
    let batch = v["largest_batch"].as_u64().expect("some batch fits");
    let fits = |rows| {
        measure_step(&options, &config, rows, 0)
            .expect("measures")
            .fits()
    };
    assert!(fits(batch) && !fits(batch + 1), "{batch}");
    let layers = v["deepest_network"].as_u64().expect("some depth fits");
    let deep = |l| {
        measure_step(&options, &config.clone().with_layers(l), 32, 0)
            .expect("measures")
            .fits()
    };
    assert!(deep(layers) && !deep(layers + 1), "{layers}");
    let sum: u64 = v["categories"]
        .as_array()
        .expect("categories")
        .iter()
        .map(|c| c["bytes"].as_u64().expect("bytes"))
        .sum();
    assert_eq!(Some(sum), v["equation_peak"]["bytes"].as_u64());
}

#[test]
fn the_message_form_is_the_learners_choice() {
    let mut request = Request::lesson(2000, 1, BatchRows::Whole(request::WholeSet::All));
    request.oom_message = gpumem::alloc::OomMessage::Current;
    let v = answer(&request);
    let message = v["oom_message"].as_str().expect("a message");
    assert!(message.contains("of which"), "{message}");
}

#[test]
fn bad_input_is_refused_with_a_reason() {
    let base = serde_json::to_value(Request::lesson(2000, 1, BatchRows::Rows(32))).expect("json");
    let with = |key: &str, value: Value| {
        let mut v = base.clone();
        v[key] = value;
        error_of(&v.to_string())
    };
    assert!(with("width", 0.into()).contains("width of 0"));
    assert!(with("batch", 0.into()).contains("at least 1 row"));
    assert!(with("card", "0".into()).contains("more than 0 bytes"));
    assert!(with("card", "16 parsecs".into()).contains("unit"));
    assert!(with("card", "native".into()).contains("has none"));
    assert!(with("card", "-3GiB".into()).contains("negative"));
    assert!(with("width", (1u64 << 60).into()).contains("2^53"));
    assert!(with("batch", "some".into()).contains("whole number"));
    assert!(with("width", (1.5).into()).contains("whole number, got 1.5"));
    assert!(with("layers", (-3).into()).contains("cannot be negative"));
    assert!(with("width", "abc".into()).contains("whole number, got \"abc\""));
    assert!(error_of("{\"width\": 1e30}").contains("2^53"));
    assert!(error_of("{\"width\": 3, \"colour\": 1}").contains("could not read"));
    assert!(error_of("not json").contains("could not read"));
    // A setup whose answer goes past JavaScript's exact integers is refused, not rounded.
    let huge = with("width", (1u64 << 40).into());
    assert!(huge.contains("2^53") || huge.contains("64 bits"), "{huge}");
}

#[test]
fn presets_start_with_the_lessons_card() {
    let v: Value = serde_json::from_str(&presets()).expect("JSON");
    assert_eq!(v["cards"][0]["bytes"], gpumem::lesson::CARD_BYTES);
    // Every preset's value, as the widget sends it, is the card it names, to the byte.
    for card in v["cards"].as_array().expect("cards") {
        let sent: gpumem::size::MemorySpec = card["card"]
            .as_str()
            .expect("a card")
            .parse()
            .expect("parses");
        assert_eq!(
            sent,
            gpumem::size::MemorySpec::Bytes(card["bytes"].as_u64().expect("bytes")),
            "{card}"
        );
    }
    assert_eq!(v["training_rows"], LESSON_TRAINING_EVENTS);
}

#[test]
fn the_check_setups_cover_fitting_failing_and_refused_answers() {
    let answers: Vec<Value> = check_setups()
        .iter()
        .map(|r| serde_json::from_str(&calculate(r)).expect("JSON"))
        .collect();
    assert!(answers.len() >= AT_LEAST, "{}", answers.len());
    let count = |p: &dyn Fn(&Value) -> bool| answers.iter().filter(|a| p(a)).count();
    assert!(count(&|a| a["fits"] == true) >= 10);
    assert!(count(&|a| a["fits"] == false) >= 10);
    assert!(count(&|a| a["error"].is_string()) >= 8);
}
