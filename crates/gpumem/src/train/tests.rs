use super::*;
use crate::Device;
use crate::mlp::MlpConfig;

/// Writes down every hook call, so a hook the loop forgets (or calls out of order) shows
/// up as a missing or misplaced line; keeps the outputs it is handed.
#[derive(Default)]
struct Recorder {
    keep: bool,
    /// Fail in `before_step` at this (epoch, step).
    fail_at: Option<(u64, u64)>,
    calls: Vec<String>,
    kept: Vec<StepOutputs>,
}

impl Observer for Recorder {
    fn keeps_outputs(&self) -> bool {
        self.keep
    }

    fn before_epoch(&mut self, _mlp: &Mlp, epoch: u64) -> Result<(), Error> {
        self.calls.push(format!("epoch {epoch}"));
        Ok(())
    }

    fn before_step(&mut self, _mlp: &Mlp, at: Progress) -> Result<(), Error> {
        self.calls.push(format!(
            "step {}.{}/{}: {} rows",
            at.epoch, at.step, at.steps_in_epoch, at.rows
        ));
        if self.fail_at == Some((at.epoch, at.step)) {
            return Err(Error::Setup("stop".into()));
        }
        Ok(())
    }

    fn after_step(
        &mut self,
        _mlp: &Mlp,
        at: Progress,
        result: &StepResult,
        outputs: Option<StepOutputs>,
    ) -> Result<(), Error> {
        self.calls.push(format!(
            "done {}.{}: {} rows, outputs {}",
            at.epoch,
            at.step,
            result.rows,
            outputs.is_some()
        ));
        self.kept.extend(outputs);
        Ok(())
    }

    fn after_epoch(&mut self, _mlp: &Mlp, totals: &EpochTotals) -> Result<(), Error> {
        self.calls.push(format!(
            "end {}: {} steps, {} rows",
            totals.epoch, totals.steps, totals.rows
        ));
        Ok(())
    }
}

fn schedule(epochs: u64, batch: u64) -> Schedule {
    Schedule {
        epochs,
        batch: BatchSize::Rows(NonZeroU64::new(batch).unwrap()),
        seed: 0,
        max_steps_per_epoch: None,
    }
}

fn planned_mlp(capacity: u64) -> (Device, Mlp) {
    let dev = Device::plan(capacity);
    let m = Mlp::new(&dev, &MlpConfig::lesson(8), 0).unwrap();
    (dev, m)
}

#[test]
fn every_hook_is_called_in_order() {
    let (_dev, mut m) = planned_mlp(1 << 30);
    let mut r = Recorder::default();
    let notices = run(&mut m, Rows::Planned(10), &schedule(2, 4), &mut r).unwrap();
    assert!(notices.is_empty());
    let mut want = Vec::new();
    for e in 1..=2 {
        want.push(format!("epoch {e}"));
        for (s, rows) in [(1, 4), (2, 4), (3, 2)] {
            want.push(format!("step {e}.{s}/3: {rows} rows"));
            want.push(format!("done {e}.{s}: {rows} rows, outputs false"));
        }
        want.push(format!("end {e}: 3 steps, 10 rows"));
    }
    assert_eq!(r.calls, want);
}

#[test]
fn kept_outputs_hold_memory_until_the_observer_drops_them() {
    let (dev, mut m) = planned_mlp(1 << 30);
    let model = dev.memory_allocated();
    let mut r = Recorder {
        keep: true,
        ..Default::default()
    };
    run(&mut m, Rows::Planned(10), &schedule(1, 4), &mut r).unwrap();
    assert!(r.calls.iter().any(|c| c.ends_with("outputs true")));
    // Three steps' y_pred and loss, each in a 512-byte block (the last step's are also the
    // loop's own), beside the gradients.
    assert_eq!(r.kept.len(), 3);
    let grads: u64 = m
        .gradients()
        .iter()
        .flat_map(|g| [&g.weight, &g.bias])
        .map(|t| t.as_ref().map_or(0, |t| t.placement().size))
        .sum();
    assert_eq!(dev.memory_allocated(), model + grads + 3 * 2 * 512);
    r.kept.clear();
    assert_eq!(dev.memory_allocated(), model + grads + 2 * 512);
    m.release_outputs();
    assert_eq!(dev.memory_allocated(), model + grads);
}

#[test]
fn an_error_ends_the_loop_where_the_observer_last_saw_it() {
    let (_dev, mut m) = planned_mlp(1 << 30);
    let mut r = Recorder {
        fail_at: Some((1, 2)),
        ..Default::default()
    };
    let e = run(&mut m, Rows::Planned(10), &schedule(2, 4), &mut r).unwrap_err();
    assert!(matches!(e, Error::Setup(ref s) if s == "stop"), "{e}");
    assert_eq!(
        r.calls.last().map(String::as_str),
        Some("step 1.2/3: 4 rows")
    );

    // Out of memory is an error like any other: 200 000 rows of width 8 need more than
    // the 4 MiB card has left once the model is on it.
    let (_dev, mut m) = planned_mlp(4 << 20);
    let mut r = Recorder::default();
    let e = run(
        &mut m,
        Rows::Planned(200_000),
        &schedule(1, 200_000),
        &mut r,
    )
    .unwrap_err();
    assert!(e.as_oom().is_some(), "{e}");
    assert_eq!(r.calls, ["epoch 1", "step 1.1/1: 200000 rows"]);
}

#[test]
fn oversized_batches_are_clamped_and_epochs_cut_short() {
    let (_dev, mut m) = planned_mlp(1 << 30);
    let mut r = Recorder::default();
    let notices = run(&mut m, Rows::Planned(10), &schedule(1, 64), &mut r).unwrap();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(r.calls.contains(&"step 1.1/1: 10 rows".to_string()));

    let mut r = Recorder::default();
    let short = Schedule {
        max_steps_per_epoch: Some(2),
        ..schedule(2, 3)
    };
    run(&mut m, Rows::Planned(10), &short, &mut r).unwrap();
    assert_eq!(
        r.calls
            .iter()
            .filter(|c| c.starts_with("end"))
            .collect::<Vec<_>>(),
        ["end 1: 2 steps, 6 rows", "end 2: 2 steps, 6 rows"]
    );
}

#[test]
fn rows_must_suit_the_backing_and_the_set_hold_rows() {
    let data = Dataset::generate(10, 0);
    let (_dev, mut planned) = planned_mlp(1 << 30);
    let cpu = Device::cpu(64 << 20);
    let mut executed = Mlp::new(&cpu, &MlpConfig::lesson(8), 0).unwrap();
    let mut r = Recorder::default();
    let cases = [
        run(&mut planned, Rows::Data(&data), &schedule(1, 4), &mut r),
        run(&mut executed, Rows::Planned(10), &schedule(1, 4), &mut r),
    ];
    for e in cases {
        assert!(matches!(e, Err(Error::Plan(_))), "{e:?}");
    }
    let e = run(&mut planned, Rows::Planned(0), &schedule(1, 4), &mut r);
    assert!(matches!(e, Err(Error::Setup(_))), "{e:?}");
    assert!(r.calls.is_empty(), "{:?}", r.calls);
}
