use gpumem::estimate::estimate;
use gpumem::mlp::{Checkpointing, MlpConfig, Precision, Strategy};
use gpumem::size::format_bytes;
fn main() {
    for (l, w, b) in [
        (85u64, 5000u64, 32u64),
        (34, 5000, 32),
        (1, 2000, 1_173_000),
        (9, 2000, 1_173_000),
    ] {
        for p in [Precision::Float32, Precision::Mixed] {
            let c = MlpConfig::lesson(w).with_layers(l).with_strategy(Strategy {
                precision: p,
                ..Default::default()
            });
            let e = estimate(&c, b).unwrap();
            println!(
                "{l}x{w} b{b} {p}: {}  [{e:?}]",
                format_bytes(e.peak_allocated)
            );
        }
        let c = MlpConfig::lesson(w).with_layers(l).with_strategy(Strategy {
            checkpointing: Checkpointing::Sqrt,
            ..Default::default()
        });
        let e = estimate(&c, b).unwrap();
        println!(
            "  sqrt ckpt: {} recomputed {}",
            format_bytes(e.peak_allocated),
            e.recomputed_layers
        );
    }
}
