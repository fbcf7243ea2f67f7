use gpumem::Device;
use gpumem::lesson::planning_on_card;
use gpumem::mlp::{Batch, Mlp, MlpConfig};
use gpumem::size::format_bytes;
fn main() {
    let rows: u64 = std::env::args().nth(1).unwrap().parse().unwrap();
    let k: u64 = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(1);
    let device = Device::new(&planning_on_card()).unwrap();
    let c = gpumem::fit::with_micro_batches(&MlpConfig::lesson(2000), k);
    let mut mlp = Mlp::new(&device, &c, 1).unwrap();
    device.start_trace();
    for s in 0..2 {
        if let Err(e) = mlp.train_step(Batch::Planned(rows)) {
            println!("step {s} failed in {}: {e}", mlp.pass());
            break;
        }
    }
    let t = device.take_trace();
    for e in &t.events {
        if e.size > 1 << 20
            || e.kind != gpumem::alloc::EventKind::Alloc && e.kind != gpumem::alloc::EventKind::Free
        {
            println!(
                "{:?} {:>14} addr {:>14} size {:>12} req {:>12} alloc {} res {}",
                e.kind,
                e.label,
                e.addr,
                format_bytes(e.size),
                e.requested,
                format_bytes(e.allocated),
                format_bytes(e.reserved)
            );
        }
    }
    for b in device.snapshot() {
        println!(
            "block seg {} addr {} size {} alloc {} {}",
            b.segment,
            b.addr,
            format_bytes(b.size),
            b.allocated,
            b.label
        );
    }
}
