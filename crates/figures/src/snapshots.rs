//! Memory snapshots in the book: the per-tensor timelines (each live tensor a named band,
//! like PyTorch's "Active Memory Timeline") of the run the monitoring page traces and of
//! challenge 3's fragmented cache, and what `memviz` prints for that second snapshot.
//!
//! Both snapshots are taken as a learner takes them — the history recorded on the device
//! (`record_memory_history`), the snapshot built from it (`memory_snapshot`, or the one kept
//! at the out-of-memory) — and drawn from the snapshot alone, as `memviz --svg` draws one
//! that PyTorch wrote.

use crate::charts::timeline::{BATCH, LAYERS, STEPS, timeline_setup};
use crate::data::{LESSON_WIDTH, SEED};
use crate::epochs;
use crate::style::grouped;
use ::charts::tensor_timeline::{self, TensorTimelineChart};
use anyhow::{Result, anyhow};
use gpumem::alloc::History;
use gpumem::lesson::{CARD_BYTES, planning_on_card};
use gpumem::mlp::{Batch, Mlp};
use gpumem::size::format_bytes;
use gpumem::snapshot::{Snapshot, Timeline};
use gpumem::{Device, DeviceOptions};
use std::sync::OnceLock;

/// The snapshot after the monitoring page's traced run: the model built and [`STEPS`]
/// steps of [`BATCH`] rows, the history on from the device's opening.
pub fn step_snapshot() -> Result<Snapshot> {
    let (config, batch, steps) = timeline_setup();
    let device = Device::new(&DeviceOptions {
        record_history: Some(History::UNBOUNDED),
        ..planning_on_card()
    })?;
    let mut mlp = Mlp::new(&device, &config, SEED)?;
    for _ in 0..steps {
        mlp.train_step(Batch::Planned(batch))?;
    }
    Ok(device.memory_snapshot())
}

/// Challenge 3's fragmentation run (its defaults, on `plan`), snapshotted at its
/// out-of-memory, with the epoch and step that ran out: computed once per process.
pub fn fragmentation_snapshot() -> Result<&'static (Snapshot, u64, u64)> {
    static SNAP: OnceLock<std::result::Result<(Snapshot, u64, u64), String>> = OnceLock::new();
    SNAP.get_or_init(|| {
        let run = || -> Result<(Snapshot, u64, u64)> {
            let setup = epochs::fragmentation_setup()?;
            let mut spec = demos::challenge3::fragmentation::spec(
                &setup,
                setup.allocator.config(),
                false,
                true,
            );
            spec.options.record_history = Some(History::UNBOUNDED);
            let result = demos::challenge3::runner::run(&spec)?;
            let failure = result
                .failure
                .as_ref()
                .ok_or_else(|| anyhow!("challenge 3's fragmentation run did not run out"))?;
            let (epoch, step) = (failure.epoch, failure.step);
            let snapshot = result
                .snapshot
                .ok_or_else(|| anyhow!("the run recorded no history"))?;
            Ok((snapshot, epoch, step))
        };
        run().map_err(|e| format!("{e:#}"))
    })
    .as_ref()
    .map_err(|e| anyhow!("challenge 3's snapshot: {e}"))
}

/// The band that is largest at the moment most bytes are live, and that moment's bytes.
fn peak(t: &Timeline) -> (String, u64) {
    let (at, &bytes) = t
        .requested
        .iter()
        .enumerate()
        .max_by_key(|&(i, b)| (*b, std::cmp::Reverse(i)))
        .unwrap_or((0, &0));
    let alive = |b: &&gpumem::snapshot::Band| b.start < at && b.end.is_none_or(|e| e >= at);
    let name = t
        .bands
        .iter()
        .filter(alive)
        .max_by_key(|b| b.bytes)
        .map_or(String::new(), |b| b.name.clone());
    (name, bytes)
}

/// `step_tensor_timeline.svg`.
pub fn step_tensor_timeline() -> Result<String> {
    let t = step_snapshot()?.timeline(0);
    let title = format!(
        "Live tensors: {STEPS} steps, {LAYERS} hidden layers of {}, batch {}",
        grouped(LESSON_WIDTH),
        grouped(BATCH)
    );
    tensor_timeline::tensor_timeline_svg(&TensorTimelineChart {
        timeline: &t,
        capacity: Some(CARD_BYTES),
        title: &title,
        alt: &alt_step_tensor_timeline()?,
    })
}

/// The alt text of `step_tensor_timeline.svg`, from the run's own figures.
pub fn alt_step_tensor_timeline() -> Result<String> {
    let t = step_snapshot()?.timeline(0);
    let (name, bytes) = peak(&t);
    Ok(format!(
        "Per-tensor timeline of {STEPS} training steps of {LAYERS} hidden layers of {} at \
         batch {} (the run of the allocated and reserved timeline), from its memory snapshot: \
         each of the {} tensors the run allocates is a band as thick as its bytes, stacked in \
         the order they were made, over {} trace entries: in each step the activations (the \
         largest bands, named a0 and a1) pile up and drop away, the live tensors peak at {} \
         with `{name}` the largest of them, and the reserved line stays at or above the \
         stack.",
        grouped(LESSON_WIDTH),
        grouped(BATCH),
        t.bands.len(),
        grouped(t.steps as u64),
        format_bytes(bytes),
    ))
}

/// `fragmentation_tensor_timeline.svg`.
pub fn fragmentation_tensor_timeline() -> Result<String> {
    let (s, epoch, _) = fragmentation_snapshot()?;
    let title = format!("Challenge 3: live tensors up to epoch {epoch}'s out-of-memory");
    let setup = epochs::fragmentation_setup()?;
    let t = s.timeline(0);
    tensor_timeline::tensor_timeline_svg(&TensorTimelineChart {
        timeline: &t,
        capacity: Some(epochs::card(&setup)?),
        title: &title,
        alt: &alt_fragmentation_tensor_timeline()?,
    })
}

/// The alt text of `fragmentation_tensor_timeline.svg`.
pub fn alt_fragmentation_tensor_timeline() -> Result<String> {
    let (s, epoch, step) = fragmentation_snapshot()?;
    let setup = epochs::fragmentation_setup()?;
    let t = s.timeline(0);
    let sum = s.summary(0, 1);
    let (size, free) = sum
        .ooms
        .first()
        .copied()
        .ok_or_else(|| anyhow!("no out-of-memory in challenge 3's snapshot"))?;
    Ok(format!(
        "Per-tensor timeline of challenge 3's fragmentation run on its {} card, from the \
         snapshot taken when it ran out: {} tensors as bands over {} trace entries, each \
         batch's activations (a0, a1 and their gradients) piling up and dropping away, and in \
         step {step} of epoch {epoch}, with {} live and {} reserved, a request of {} failing with {} \
         free on the card although {} is reserved and not in use.",
        format_bytes(epochs::card(&setup)?),
        t.bands.len(),
        grouped(t.steps as u64),
        format_bytes(sum.allocated),
        format_bytes(sum.reserved),
        format_bytes(size),
        format_bytes(free),
        format_bytes(sum.reserved - sum.allocated),
    ))
}

/// What `memviz` prints for challenge 3's snapshot, as a text block, the file named as the
/// demo's command names it. The page says the cache held more unused bytes than the failed
/// request: checked here.
pub fn fragmentation_memviz() -> Result<String> {
    let sum = fragmentation_snapshot()?.0.summary(0, 0);
    let request = sum.ooms.first().map_or(u64::MAX, |o| o.0);
    if sum.reserved - sum.allocated <= request {
        return Err(anyhow!(
            "challenge 3's snapshot: reserved − allocated is not larger than the failed request"
        ));
    }
    let dir = std::env::temp_dir().join(format!("figures-memviz-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("c3.pickle");
    fragmentation_snapshot()?.0.write(&path)?;
    let printed = memviz::run([
        "memviz",
        path.to_str().unwrap_or_default(),
        "--largest",
        "4",
    ]);
    std::fs::remove_dir_all(&dir).ok();
    let printed = printed?.replace(&path.display().to_string(), "c3.pickle");
    Ok(format!(
        "```text\n$ cargo run -p memviz -- c3.pickle --largest 4\n{}```\n",
        printed
    ))
}
