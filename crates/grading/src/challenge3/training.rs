//! The leak (the core's second half): the learner's training loop, run on the cpu backing against a plain loop's losses
//! and against itself with more epochs and more steps.

use super::{Answers, TrainFn, exact, steps};
use crate::{NoValue, Report, attempt};
use gpumem::data::{Dataset, Split};
use gpumem::mlp::{Batch, Mlp, MlpConfig};
use gpumem::{Backend, Device, DeviceOptions, MemorySpec};

/// A loop's losses (or its error, in words) and the peak allocated bytes of its run.
type LoopRun = (Result<Vec<f32>, String>, u64);

/// The grader's training setup: small enough to run real kernels on the cpu in a second.
const WIDTH: u64 = 64;
const ROWS: u64 = 32;
const SEED: u64 = 3;

/// `n` mini-batches of `ROWS` rows of the lesson's data.
fn batches(n: u64) -> Vec<Split> {
    let data = Dataset::generate(n * ROWS, SEED);
    let idx: Vec<usize> = (0..data.train.len()).collect();
    idx.chunks(ROWS as usize)
        .map(|c| data.train.gather(c))
        .collect()
}

/// A 1 GiB device on the cpu backing, or why there is none: the grading crate builds the
/// engine without it (a learner's first `cargo test` stays small), and Challenge 3's exercise
/// turns gpumem's `cpu` feature on.
fn try_cpu_device() -> Result<Device, String> {
    Device::new(&DeviceOptions {
        backend: Backend::Cpu,
        memory: MemorySpec::Bytes(1 << 30),
        ..Default::default()
    })
    .map_err(|e| e.to_string())
}

/// The device of every run, once [`grade_training`] has checked that one opens.
fn cpu_device() -> Device {
    try_cpu_device().expect("grade_training checked that a cpu device opens")
}

/// What a loop did on a fresh device: its losses and the device's peak allocated bytes.
fn run_loop(train: TrainFn, steps: u64, epochs: u64) -> Result<LoopRun, NoValue> {
    let device = cpu_device();
    let mut mlp = Mlp::new(&device, &MlpConfig::lesson(WIDTH), SEED).expect("a small network");
    let data = batches(steps);
    let result = attempt(|| train(&mut mlp, &data, epochs))?;
    Ok((
        result.map_err(|e| e.to_string()),
        device.max_memory_allocated(),
    ))
}

/// The losses of a plain loop that keeps nothing: mean loss over each epoch's rows.
fn reference_losses(steps: u64, epochs: u64) -> Vec<f32> {
    let device = cpu_device();
    let mut mlp = Mlp::new(&device, &MlpConfig::lesson(WIDTH), SEED).expect("a small network");
    let data = batches(steps);
    (0..epochs)
        .map(|_| {
            let mut sum = 0f64;
            for b in &data {
                let r = mlp.train_step(Batch::Data(b)).expect("fits");
                sum += f64::from(r.loss.expect("kernels ran")) * r.rows as f64;
            }
            (sum / (steps * ROWS) as f64) as f32
        })
        .collect()
}

/// Losses to 4 decimals, the precision the check asks for.
fn rounded(v: &[f32]) -> Vec<String> {
    v.iter().map(|l| format!("{l:.4}")).collect()
}

const LEAK_HINT: &str = "memory still grows with every step: something from each step stays \
alive. Read the loss you need as a number (or read the loss tensor right away) and let the \
StepOutputs drop at the end of the step — empty_cache() cannot help, it only returns cached \
blocks that no tensor uses";

/// Grades the leak.
pub(super) fn grade_training(answers: &Answers, report: &mut Report) {
    const STEPS: u64 = 8;
    if let Err(why) = try_cpu_device() {
        report.compare(
            steps::TRAIN,
            "a device on the engine's cpu backing, to run your loop",
            &"it opens".to_string(),
            "the loop runs real kernels",
            Ok(why),
            "this build of the grader has no cpu backing: exercises/challenge3/Cargo.toml turns \
             on gpumem's `cpu` feature (restore it: git checkout -- exercises/challenge3/Cargo.toml)",
        );
        return;
    }
    let runs: Vec<Result<LoopRun, NoValue>> = [(STEPS, 1), (STEPS, 2), (STEPS, 3)]
        .iter()
        .map(|&(s, e)| run_loop(answers.train, s, e))
        .collect();
    let peaks: Result<Vec<u64>, NoValue> = runs
        .iter()
        .map(|r| match r {
            Ok((_, peak)) => Ok(*peak),
            Err(e) => Err(e.clone()),
        })
        .collect();
    let flat = peaks
        .as_ref()
        .map(|p| vec![p[0]; p.len()])
        .unwrap_or_default();
    report.compare(
        steps::TRAIN,
        format!("peak allocated after 1, 2 and 3 epochs of {STEPS} steps"),
        &flat.iter().map(|&b| exact(b)).collect::<Vec<_>>(),
        "the same peak every time: a loop that keeps nothing alive does not grow",
        peaks.clone().map(|p| p.iter().map(|&b| exact(b)).collect()),
        LEAK_HINT,
    );
    let longer = run_loop(answers.train, 2 * STEPS, 1);
    let expected_one = peaks.as_ref().map_or(0, |p| p[0]);
    report.compare(
        steps::TRAIN,
        format!(
            "peak allocated of one epoch of {} steps vs {STEPS} steps",
            2 * STEPS
        ),
        &exact(expected_one),
        "the same as with half the steps",
        longer.map(|(_, p)| exact(p)),
        LEAK_HINT,
    );
    let expected = rounded(&reference_losses(STEPS, 3));
    let got = match &runs[2] {
        Ok((Ok(losses), _)) => Ok(rounded(losses)),
        Ok((Err(e), _)) => Ok(vec![format!("error: {e}")]),
        Err(e) => Err(e.clone()),
    };
    report.compare(
        steps::TRAIN,
        format!("losses of 3 epochs of {STEPS} steps"),
        &expected,
        "each epoch's mean loss over its rows, from a loop that trains on every batch",
        got,
        "return one loss per epoch — the mean over the epoch's rows (every batch here has the \
         same rows, so the mean of the steps' losses) — and train on every batch of every epoch",
    );
}
