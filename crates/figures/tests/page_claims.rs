//! The pages' sentences that are not generated numbers but claims about them: each test
//! names the page and keeps its words true if the engine's numbers move.

use figures::data::{self, LESSON_WIDTH, equation, measure};
use figures::pages::fitting_more::on_card;
use figures::tape;
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::lesson::{CARD_BYTES, planning_device, planning_on_card, planning_unlimited};
use gpumem::mlp::{MlpConfig, Pass};

/// What lives in GPU memory and Inside the caching allocator: the step's tape equals PyTorch's, its peak comes in the
/// backward pass at `threshold_backward` with three batch × width tensors alive (the kept
/// activation, the gradient flowing back, the new one); the full batch's peak is about three
/// hidden activations; the equation is exact inside `is_exact`, within `band_margin`
/// outside, and its raw bytes equal the engine's everywhere; the engine equals PyTorch's
/// fixture but for Adam's step counts.
#[test]
fn memory_equation_page_claims() {
    let (engine, torch) = (tape::engine_step().unwrap(), tape::pytorch_step().unwrap());
    assert_eq!(engine.rows.len(), torch.rows.len());
    for (e, t) in engine.rows.iter().zip(&torch.rows) {
        assert_eq!(
            (e.bytes, e.live),
            (t.bytes, t.live),
            "{} / {}",
            e.made,
            t.made
        );
        let sizes = |v: &[(String, u64)]| {
            let mut b: Vec<u64> = v.iter().map(|x| x.1).collect();
            b.sort_unstable();
            b
        };
        assert_eq!(sizes(&e.freed), sizes(&t.freed), "{} / {}", e.made, t.made);
    }
    let peak = engine.peak().unwrap();
    assert_eq!(torch.peak(), Some(peak));
    assert_eq!(torch.rows[peak].op, "threshold_backward");
    let wide = tape::BATCH * tape::WIDTH * 4;
    let alive: Vec<&str> = engine
        .alive_at_peak
        .iter()
        .filter(|(_, b)| *b == wide)
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(alive, ["a0", "a0.grad", "relu.grad"]);
    // `zero_grad()` frees the four gradients; the two "alive" columns differ only there, by
    // the batch the engine uploads afterwards.
    assert_eq!((engine.zero_grad.len(), torch.zero_grad.len()), (4, 4));
    let (_, batch, after) = engine.batch.clone().unwrap();
    assert_eq!(after, torch.live_after_zero_grad);
    assert_eq!(engine.live_after_zero_grad + batch, after);

    // The busiest moment: the L kept activations and two more batch × width tensors; near
    // the bottom of the backward pass (nearly every gradient made) where the weights
    // dominate; with a small batch and Adam, the update (five copies of the model: Adam's square roots are
    // temporaries as large as the parameters).
    for layers in 1..=4 {
        let c = data::network(LESSON_WIDTH, layers, gpumem::mlp::Optimizer::LESSON);
        let e = equation(&c, 100_000).unwrap();
        let act = (100_000 * LESSON_WIDTH * 4) as f64;
        let ratio = (e.activations + e.temporaries) as f64 / act;
        assert!(
            (ratio - (layers + 2) as f64).abs() < 0.05,
            "{layers}: {ratio}"
        );
    }
    let sgd = equation(&data::network(5000, 5, gpumem::mlp::Optimizer::LESSON), 32).unwrap();
    assert!(sgd.gradients > sgd.parameters / 10 * 9);
    let adam = equation(&data::network(5000, 5, data::adam()), 32).unwrap();
    assert_eq!(adam.temporaries, adam.parameters);
    assert_eq!(adam.optimizer_state, 2 * adam.parameters);
    assert_eq!(adam.gradients, adam.parameters);

    let config = MlpConfig::lesson(LESSON_WIDTH);
    let e = equation(&config, FULL).unwrap();
    let activation = FULL * LESSON_WIDTH * 4;
    let ratio = e.peak_allocated as f64 / activation as f64;
    assert!((2.95..3.05).contains(&ratio), "{ratio}");
    assert!(e.activations >= activation && e.activations < activation + (64 << 20));
    assert!(e.temporaries >= 2 * activation && e.temporaries < 2 * activation + (64 << 20));
    // Only the output layer's gradients exist at the busiest moment.
    assert!(e.gradients < e.parameters);

    for (c, batch) in gpumem::estimate::reference_setups() {
        let m = measure(&planning_unlimited(), &c, batch).unwrap();
        let predicted = equation(&c, batch).unwrap().peak_allocated;
        if gpumem::estimate::is_exact(&c, batch) {
            assert_eq!(predicted, m.peak_allocated);
        } else {
            assert!(predicted.abs_diff(m.peak_allocated) <= gpumem::estimate::band_margin(&c));
        }
        assert_eq!(
            gpumem::estimate::requested_peak(&c, batch).unwrap(),
            m.peak_requested
        );
    }
    let fixture = figures::pages::memory_equation::pytorch_fixture().unwrap();
    assert!(!fixture.contains("Different"), "{fixture}");
}

/// Mini-batching: each row costs about three hidden activations' worth (one kept, two at
/// the backward peak), and a step at batch 32 needs less than a megabyte.
#[test]
fn mini_batching_page_claims() {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let peak = |b| equation(&config, b).unwrap().peak_allocated;
    let per_row = (peak(100_000) - peak(50_000)) as f64 / 50_000.0;
    let three = (3 * LESSON_WIDTH * 4) as f64;
    assert!((per_row / three - 1.0).abs() < 0.01, "{per_row}");
    assert!(peak(32) < 1_000_000);
}

/// Challenge 1: the full batch runs out in the forward pass allocating `a0` while `z0` is
/// alive; it fits a 40 GiB card (`--device-memory 40GiB`); the largest batch that fits is
/// more than half the training set.
#[test]
fn challenge1_page_claims() {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let m = measure(&planning_on_card(), &config, FULL).unwrap();
    let oom = m.oom.unwrap();
    assert_eq!(
        (m.failed_in, oom.label.as_str()),
        (Some(Pass::Forward), "a0")
    );
    assert!(oom.allocated >= oom.requested);
    let big = measure(&planning_device(40 << 30), &config, FULL).unwrap();
    assert!(big.fits());
    let largest = data::largest_batch_on_card(LESSON_WIDTH).unwrap().unwrap();
    assert!(largest.rows > FULL / 2 && largest.rows < FULL);
    // Its reserved peak is more than a GiB short of the card, yet one row more fails.
    assert!(CARD_BYTES - largest.step.peak_reserved > 1 << 30);
    let more = measure(&planning_on_card(), &config, largest.rows + 1).unwrap();
    assert!(!more.fits());
}

/// Challenge 2: one layer too many runs out in the backward pass with SGD (a gradient) and
/// in the optimizer step with Adam (its square roots); about two and a half times as many
/// layers fit with SGD.
#[test]
fn challenge2_page_claims() {
    let sgd = data::deepest_fit(gpumem::mlp::Optimizer::LESSON).unwrap();
    let adam = data::deepest_fit(data::adam()).unwrap();
    assert_eq!(sgd.failed_in, Pass::Backward);
    assert!(sgd.oom.label.ends_with(".grad"), "{}", sgd.oom.label);
    assert_eq!(adam.failed_in, Pass::Optimizer);
    assert!(
        adam.oom.label.contains("_foreach_sqrt"),
        "{}",
        adam.oom.label
    );
    assert_eq!(sgd.equation_layers, sgd.layers);
    assert_eq!(adam.equation_layers, adam.layers);
    let ratio = sgd.layers as f64 / adam.layers as f64;
    assert!((2.3..2.7).contains(&ratio), "{ratio}");
}

/// Fitting more: `nn.ReLU(inplace=True)` keeps the peak, moves the full batch's failure from
/// the forward to the backward pass, and on the lesson's card fits a larger batch, because
/// without it the batch one row past the largest fails on a fragmented cache that the
/// in-place step never cuts.
#[test]
fn relu_inplace_claims() {
    let (plain, inplace) = (on_card(false).unwrap(), on_card(true).unwrap());
    assert_eq!(plain.full_peak, inplace.full_peak);
    for b in [32, 100_000, plain.largest] {
        let peak = |i| {
            measure(
                &planning_unlimited(),
                &figures::pages::fitting_more::lesson(i),
                b,
            )
            .unwrap()
            .peak_allocated
        };
        assert_eq!(peak(false), peak(true), "{b} rows");
    }
    assert_eq!(plain.failed_in, Pass::Forward.to_string());
    assert_eq!(inplace.failed_in, Pass::Backward.to_string());
    assert!(inplace.largest > plain.largest);
    assert!(inplace.largest_reserved <= CARD_BYTES);
    let next = figures::fragmented::fragmented_step(
        &figures::pages::fitting_more::lesson(false),
        plain.largest + 1,
    )
    .unwrap();
    assert!(next.is_some());
}

/// Fitting more: mixed precision halves the lesson's full batch but saves nothing for
/// Challenge 2's deep network at batch 32, where autocast's float16 weight copies add a little.
#[test]
fn mixed_precision_claims() {
    use gpumem::mlp::{Precision, Strategy};
    let mixed = |c: MlpConfig| {
        c.with_strategy(Strategy {
            precision: Precision::Mixed,
            ..Default::default()
        })
    };
    let deep = data::deepest_fit(gpumem::mlp::Optimizer::LESSON).unwrap();
    let c = data::network(
        data::DEEP_WIDTH,
        deep.layers,
        gpumem::mlp::Optimizer::LESSON,
    );
    let plain = equation(&c, data::DEEP_BATCH).unwrap().peak_allocated;
    let half = equation(&mixed(c), data::DEEP_BATCH)
        .unwrap()
        .peak_allocated;
    assert!(
        half > plain && half - plain < plain / 100,
        "{half} vs {plain}"
    );
    let lesson = MlpConfig::lesson(LESSON_WIDTH);
    let ratio = equation(&mixed(lesson.clone()), FULL)
        .unwrap()
        .peak_allocated as f64
        / equation(&lesson, FULL).unwrap().peak_allocated as f64;
    assert!((0.49..0.51).contains(&ratio), "{ratio}");
}

/// Introduction and Where to get help: the lesson the book follows is episode 06 of the HSF's
/// GPU lesson (hsf-training-ml-gpu-webpage), not of its general ML lesson; every link to the
/// source names the GPU lesson's episode.
#[test]
fn the_lessons_source_is_the_gpu_lesson() {
    let src = figures::book::book_src();
    for page in std::fs::read_dir(&src).unwrap() {
        let path = page.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("hsf-training-ml-webpage"),
            "{}: links the general ML lesson, not the GPU lesson",
            path.display()
        );
        for (at, _) in text.match_indices("hsf-training-ml-gpu-webpage") {
            let rest = &text[at..];
            assert!(
                rest.starts_with("hsf-training-ml-gpu-webpage/06-memory/"),
                "{}: a link to the GPU lesson that is not its memory episode",
                path.display()
            );
        }
    }
}

/// What lives in GPU memory and Mini-batching: the lesson's model is so small that a few rows'
/// activations outweigh it — at the lesson's batch of 32 the step is mostly activations, not
/// "the model's own memory is all there is up to thousands of rows".
#[test]
fn the_batch_outweighs_the_model_after_a_few_rows() {
    use figures::charts::batch_log::{batch_bytes, crossover_rows, model_bytes};
    let rows = crossover_rows().unwrap();
    assert!(rows < 32, "{rows}");
    let at32 = equation(&MlpConfig::lesson(LESSON_WIDTH), 32).unwrap();
    assert!(batch_bytes(&at32) > 4 * model_bytes(&at32));
    let before = equation(&MlpConfig::lesson(LESSON_WIDTH), rows - 1).unwrap();
    assert!(batch_bytes(&before) <= model_bytes(&before));
}

/// Fitting more: scaling each micro-batch's loss by `1 / k` gives the large batch's update
/// only when the micro-batches have equal rows; with an uneven split the rows of the smaller
/// micro-batches weigh more (measured on the cpu backing, one SGD step from the same weights).
#[test]
fn one_over_k_matches_the_large_batch_only_for_an_even_split() {
    use gpumem::data::Dataset;
    use gpumem::mlp::{Batch, Mlp, Optimizer, Strategy};
    let updated = |rows: u64, k: u64| -> Vec<f32> {
        let data = Dataset::generate(rows, 5).train;
        let config = MlpConfig::lesson(16)
            .with_optimizer(Optimizer::sgd(0.5))
            .with_strategy(Strategy {
                accumulation: k,
                ..Strategy::default()
            });
        let dev = gpumem::Device::cpu(1 << 30);
        let mut mlp = Mlp::new(&dev, &config, 9).unwrap();
        mlp.train_step(Batch::Data(&data)).unwrap();
        mlp.layers()[0].weight.read().unwrap()
    };
    let gap = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max)
    };
    // 9 rows in 3 × 3: the large batch's update, up to rounding.
    assert!(gap(&updated(9, 1), &updated(9, 3)) < 1e-5);
    // 10 rows in 4 + 3 + 3: not the same update.
    assert!(gap(&updated(10, 1), &updated(10, 3)) > 1e-3);
}

/// When training dies: evaluation under `torch.no_grad()` (the engine's `evaluate`) frees each
/// layer's input once the next layer has used it, so its peak holds about two activations,
/// while a training step keeps one per hidden layer for the backward pass.
#[test]
fn evaluation_without_autograd_keeps_no_activations() {
    use gpumem::data::Dataset;
    use gpumem::mlp::{Batch, Mlp};
    let (width, layers) = (256u64, 4u64);
    let data = Dataset::generate(1200, 3).train;
    let rows = data.len() as u64;
    let activation = rows * width * 4;
    let dev = gpumem::Device::cpu(1 << 30);
    let config = MlpConfig::lesson(width).with_layers(layers);
    let mut mlp = Mlp::new(&dev, &config, 1).unwrap();
    let base = dev.memory_allocated();
    dev.reset_peak_memory_stats();
    mlp.evaluate(&data, rows).unwrap();
    let eval_peak = dev.max_memory_allocated() - base;
    dev.reset_peak_memory_stats();
    mlp.train_step(Batch::Data(&data)).unwrap();
    let train_peak = dev.max_memory_allocated() - base;
    assert!(eval_peak < 3 * activation, "{eval_peak} vs {activation}");
    assert!(train_peak > layers * activation, "{train_peak}");
}

/// The table of contents: the page that explains the allocator's settings and the leak
/// patterns (When training dies) comes before Challenge 3, which uses them, and each challenge
/// is nested under the lesson page that leads to it.
#[test]
fn the_settings_are_explained_before_challenge_3_uses_them() {
    let summary = std::fs::read_to_string(figures::book::book_src().join("SUMMARY.md")).unwrap();
    let lines: Vec<&str> = summary.lines().collect();
    let at = |page: &str| lines.iter().position(|l| l.contains(page)).unwrap();
    let (settings, c3) = (at("(after-a-few-epochs.md)"), at("(challenge-3.md)"));
    assert!(settings < c3);
    for n in 1..=4 {
        let c = at(&format!("(challenge-{n}.md)"));
        assert!(lines[c].starts_with("  - "), "challenge {n} is nested");
        assert!(
            lines[c - 1].starts_with("- "),
            "challenge {n} follows its lesson page"
        );
    }
    assert_eq!(c3, settings + 1);
}

/// Every lesson page opens with its questions, then its objectives, as the lesson's episodes
/// do (and the introduction says).
#[test]
fn lesson_pages_open_with_questions_and_objectives() {
    let src = figures::book::book_src();
    for page in [
        "memory-equation",
        "mini-batching",
        "networks",
        "monitoring",
        "after-a-few-epochs",
        "fitting-more",
        "allocator",
    ] {
        let text = std::fs::read_to_string(src.join(format!("{page}.md"))).unwrap();
        let q = text.find("<div class=\"callout questions\">");
        let o = text.find("<div class=\"callout objectives\">");
        let first_section = text.find("\n## ").unwrap_or(text.len());
        assert!(
            matches!((q, o), (Some(q), Some(o)) if q < o && o < first_section),
            "{page}: questions, then objectives, before the first section"
        );
    }
}

/// The introduction: the lesson's four teaching pages close with key points and a quiz.
#[test]
fn the_lessons_teaching_pages_close_with_key_points_and_a_quiz() {
    let src = figures::book::book_src();
    let intro = std::fs::read_to_string(src.join("introduction.md")).unwrap();
    assert!(intro.contains("(memory, mini-batching, networks, monitoring)"));
    for page in ["memory-equation", "mini-batching", "networks", "monitoring"] {
        let text = std::fs::read_to_string(src.join(format!("{page}.md"))).unwrap();
        let k = text.find("<div class=\"callout keypoints\">");
        let q = text.find("{{#quiz ");
        assert!(
            matches!((k, q), (Some(_), Some(_))),
            "{page}: key points and a quiz"
        );
    }
}

/// Challenge 4: every combination the demo recommends was timed in every recorded run, and
/// the generated advice names, for each run, its device and the fastest timed row that fits
/// (found here from the record, not by the advice's code).
#[test]
fn challenge4_advice_follows_the_recorded_times() {
    use demos::challenge4::strategies::row_of;
    use figures::measured::{base, load, planned};
    let advice = figures::pages::challenge_4::challenge4_time_advice().unwrap();
    for setup in &load().unwrap().setups {
        let (rows, cheapest) = planned(setup.layers).unwrap();
        let base = base(setup.layers);
        for run in &setup.runs {
            let time = |n: &str| run.rows.iter().find(|r| r.name == n)?.relative_to_none;
            for fit in [&cheapest.best, &cheapest.float32] {
                let row = row_of(&rows, &fit.as_ref().unwrap().strategy, &base).unwrap();
                assert!(time(&row.name).is_some(), "{} not timed", row.name);
            }
            let (fastest, t) = rows
                .iter()
                .filter(|r| r.fits)
                .filter_map(|r| Some((r.name.as_str(), time(&r.name)?)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap();
            let words = fastest.split_once(": ").map_or(fastest, |(_, w)| w);
            let device = if run.backend == "cpu" {
                "the processor, not a GPU"
            } else {
                &run.device
            };
            let line = advice.lines().find(|l| {
                l.starts_with(&format!("- {} hidden layer", setup.layers))
                    && l.contains(&format!("`{}` backing ({device}", run.backend))
            });
            let said = format!("**{words}** (×{t:.2} the time of none)");
            assert!(line.is_some_and(|l| l.contains(&said)), "{said}:\n{advice}");
        }
    }
}

/// Fitting more, gradient accumulation: accumulating is not free. At the accumulated update's
/// peak every `.grad` is alive (the parameters' bytes), against almost none at the peak of one
/// step of a micro-batch's rows; the difference between the two peaks is about those
/// gradients. Challenge 4 and the quiz no longer say the gradients cost nothing.
#[test]
fn accumulating_into_live_gradients_costs_the_gradients() {
    let c = figures::pages::fitting_more::accumulation_cost_numbers().unwrap();
    assert!(c.micro_batches > 1);
    assert_eq!(c.update_gradients, c.all_gradients);
    assert!(c.step_gradients * 1000 < c.all_gradients, "{c:?}");
    let ratio = c.extra() as f64 / c.all_gradients as f64;
    assert!((0.9..1.05).contains(&ratio), "{ratio} {c:?}");
    let page = |name: &str| {
        let path = figures::book::book_src().join(format!("{name}.md"));
        let text = std::fs::read_to_string(path).unwrap();
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let fitting = page("fitting-more");
    assert!(fitting.contains("The gradients are not free, though."));
    assert!(fitting.contains("{{#include generated/accumulation_cost.md}}"));
    assert!(!fitting.contains("costs nothing extra"));
    assert!(page("challenge-4").contains("Accumulating is not free"));
    let quiz = figures::book::book_src().join("generated/quizzes/fitting-more.toml");
    assert!(
        !std::fs::read_to_string(quiz)
            .unwrap()
            .contains("summed in place")
    );
}

/// Fitting more, "What to try first": Adam's count of copies depends on its implementation.
/// `fused=True` makes no square roots, so more layers fit than with the default `foreach`;
/// `foreach=False` makes one parameter's at a time, in between.
#[test]
fn fused_adam_fits_deeper_than_foreach() {
    use figures::pages::fitting_more::deepest_adam_with;
    use gpumem::mlp::OptimizerImpl;
    let foreach = deepest_adam_with(OptimizerImpl::Foreach).unwrap();
    assert_eq!(foreach, data::deepest_fit(data::adam()).unwrap().layers);
    let fused = deepest_adam_with(OptimizerImpl::Fused).unwrap();
    let forloop = deepest_adam_with(OptimizerImpl::ForLoop).unwrap();
    assert!(
        foreach < forloop && forloop <= fused,
        "{foreach} {forloop} {fused}"
    );
}
