//! Scratch (not committed).
use gpumem::lesson::{planning_on_card, planning_unlimited};
use gpumem::measure::measure_step;
use gpumem::mlp::{MlpConfig, Strategy};
use gpumem::size::format_bytes;
fn show(name: &str, c: &MlpConfig, b: u64) {
    let m = measure_step(&planning_on_card(), c, b, 1).unwrap();
    let u = measure_step(&planning_unlimited(), c, b, 1).unwrap();
    println!(
        "{name} b={b}: fits={} failed_in={:?} label={:?} alloc={} res={} | unlimited peak alloc {} res {} req {}",
        m.fits(),
        m.failed_in,
        m.oom.as_ref().map(|o| o.label.clone()),
        format_bytes(m.peak_allocated),
        format_bytes(m.peak_reserved),
        format_bytes(u.peak_allocated),
        format_bytes(u.peak_reserved),
        u.peak_requested
    );
    if let Some(o) = &m.oom {
        println!(
            "   {o}\n   frag={} cached_unused={}",
            o.is_fragmentation(),
            format_bytes(o.cached_unused())
        );
    }
}
fn main() {
    let full = gpumem::data::LESSON_TRAINING_EVENTS;
    let l = MlpConfig::lesson(2000);
    show("lesson", &l, full);
    let inplace = l.clone().with_strategy(Strategy {
        relu_inplace: true,
        ..Default::default()
    });
    show("inplace", &inplace, full);
    for b in [655_360, 655_361, 660_000, 700_000, 710_000] {
        show("lesson", &l, b);
        show("inplace", &inplace, b);
    }
    let s = gpumem::measure::largest_batch(&planning_on_card(), &inplace, full).unwrap();
    println!("inplace largest {:?}", s.best);
    for k in [2, 3] {
        let c = gpumem::fit::with_micro_batches(&l, k);
        show(&format!("acc{k}"), &c, full);
    }
}
