//! Trains the lesson's network on the synthetic data and prints loss, accuracy and memory
//! per epoch: `cargo run --release -p gpumem --example train -- --help`.

use anyhow::Context;
use clap::Parser;
use gpumem::data::{Dataset, LESSON_TRAINING_EVENTS};
use gpumem::mlp::{Mlp, MlpConfig, Optimizer};
use gpumem::size::format_bytes;
use gpumem::train::{BatchSize, Schedule, TrainOptions, train};
use gpumem::{Backend, Device, DeviceOptions, MemorySpec};
use indicatif::{ProgressBar, ProgressStyle};

/// Train the lesson's classifier (2 features → hidden layers → signal/background).
#[derive(Debug, Parser)]
struct Args {
    /// auto, wgpu, cpu (plan cannot train: it runs no kernels).
    #[arg(long, default_value = "auto")]
    backend: Backend,
    /// Memory of the card (`native` for what the backing has).
    #[arg(long, default_value = gpumem::lesson::CARD_ARG)]
    device_memory: MemorySpec,
    /// Width of the hidden layers.
    #[arg(long, default_value_t = 100)]
    hidden: u64,
    /// Number of hidden layers.
    #[arg(long, default_value_t = 1)]
    layers: u64,
    /// Rows per batch, or `full`.
    #[arg(long, default_value = "32")]
    batch: BatchSize,
    /// Training events (a quarter as many more are held out for validation).
    #[arg(long, default_value_t = LESSON_TRAINING_EVENTS)]
    samples: u64,
    /// Passes over the training set.
    #[arg(long, default_value_t = 1)]
    epochs: u64,
    /// Learning rate of SGD (the lesson's 0.001), or of Adam with --adam.
    #[arg(long, default_value_t = 0.001)]
    lr: f32,
    /// Use Adam instead of SGD.
    #[arg(long)]
    adam: bool,
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let device = Device::new(&DeviceOptions {
        backend: args.backend,
        memory: args.device_memory,
        ..Default::default()
    })?;
    let info = device.info();
    println!(
        "device: {} ({}), {} card",
        info.backend, info.reason, info.memory
    );
    let optimizer = if args.adam {
        Optimizer::adam(args.lr)
    } else {
        Optimizer::sgd(args.lr)
    };
    let config = MlpConfig::lesson(args.hidden)
        .with_layers(args.layers)
        .with_optimizer(optimizer);
    let data = Dataset::generate(args.samples, args.seed);
    let mut mlp = Mlp::new(&device, &config, args.seed).context("building the network")?;
    let (before_loss, before_acc) = mlp.evaluate(&data.validation, 4096)?;
    println!(
        "before training: validation loss {before_loss:.4}, accuracy {:.1} %",
        100.0 * before_acc
    );
    let options = TrainOptions {
        schedule: Schedule {
            epochs: args.epochs,
            batch: args.batch,
            seed: args.seed,
            max_steps_per_epoch: None,
        },
        eval_batch: 4096,
    };
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("epoch {msg} [{bar:30}] {pos}/{len} ({elapsed}, eta {eta})")?
            .progress_chars("=> "),
    );
    let start = std::time::Instant::now();
    let (reports, notices) = train(&mut mlp, &data, &options, |p| {
        bar.set_length(p.steps_in_epoch);
        bar.set_message(p.epoch.to_string());
        bar.set_position(p.step);
    })?;
    bar.finish_and_clear();
    for n in notices {
        println!("note: {n}");
    }
    for r in &reports {
        println!(
            "epoch {}: train loss {:.4}, accuracy {:.1} % | validation loss {:.4}, accuracy {:.1} % | allocated {}, reserved {}, peak {}",
            r.epoch,
            r.train_loss,
            100.0 * r.train_accuracy,
            r.validation_loss,
            100.0 * r.validation_accuracy,
            format_bytes(r.allocated),
            format_bytes(r.reserved),
            format_bytes(r.peak_allocated)
        );
    }
    println!(
        "{} epoch(s) in {:.1} s",
        reports.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
