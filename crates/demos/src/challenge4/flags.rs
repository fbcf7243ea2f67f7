//! Challenge 4's command line: the flags and how each value is read.

use super::strategies::Accumulation;
use clap::Parser;
use cli::{DeviceArgs, ModelArgs, SnapshotArgs};
use gpumem::mlp::{Checkpointing, Precision};
use std::num::NonZeroU64;

/// Make a setup that does not fit the card fit it: mixed precision, gradient accumulation,
/// activation checkpointing and float32 instead of float64, alone and combined — their peak
/// memory at full size, their time and accuracy on a sample, and the cheapest that fits.
#[derive(Debug, Parser)]
#[command(name = "challenge4", version)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) device: DeviceArgs,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// The precision the setup starts from: float32, or float64 (NumPy's default, the field
    /// report's case). Mixed precision is one of the strategies the demo tries.
    #[arg(long, value_name = "P", default_value = "float32", value_parser = parse_precision)]
    pub(crate) precision: Precision,
    /// Micro-batches per update in the rows that accumulate gradients: a number, or `auto`
    /// for the fewest with which accumulation alone fits the card (at least 2).
    #[arg(long, value_name = "K|auto", default_value = "auto", value_parser = parse_accumulation, allow_hyphen_values = true)]
    pub(crate) accumulation: Accumulation,
    /// Hidden layers per checkpoint segment in the rows that checkpoint: a number, or `sqrt`
    /// for ⌈√layers⌉.
    #[arg(long, value_name = "K|sqrt", default_value = "sqrt", value_parser = parse_checkpoint, allow_hyphen_values = true)]
    pub(crate) checkpoint: Checkpointing,
    /// Rows of the synthetic data the timing runs train on (the full size would need tens of
    /// GiB of host memory on the cpu backing). Debug builds are slow: for realistic timings
    /// use `cargo run --release -p challenge4 -- --time-samples 20000`.
    #[arg(long, value_name = "N", default_value = "256", value_parser = cli::args::parse_count, allow_hyphen_values = true)]
    pub(crate) time_samples: NonZeroU64,
    /// Epochs each timing run trains on the sample.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_epochs, allow_hyphen_values = true)]
    pub(crate) time_epochs: u64,
    #[command(flatten)]
    pub(crate) snapshot: SnapshotArgs,
    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub(crate) json: bool,
}

fn parse_precision(s: &str) -> Result<Precision, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "float32" | "f32" => Ok(Precision::Float32),
        "float64" | "f64" => Ok(Precision::Float64),
        "mixed" | "float16" | "f16" => Err(
            "the setup starts from float32 or float64; mixed precision is one of the strategies \
             the demo tries on it"
                .into(),
        ),
        _ => Err(format!(
            "`{s}` is not a precision: expected float32 or float64"
        )),
    }
}

fn parse_accumulation(s: &str) -> Result<Accumulation, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(Accumulation::Auto);
    }
    cli::args::parse_positive(s)
        .map(Accumulation::Steps)
        .map_err(|e| format!("micro-batches {e} (or `auto`)"))
}

fn parse_checkpoint(s: &str) -> Result<Checkpointing, String> {
    if s.trim().eq_ignore_ascii_case("sqrt") {
        return Ok(Checkpointing::Sqrt);
    }
    cli::args::parse_positive(s)
        .map(Checkpointing::Every)
        .map_err(|e| format!("layers per segment {e} (or `sqrt`)"))
}

fn parse_epochs(s: &str) -> Result<u64, String> {
    let n = cli::args::parse_positive(s)?;
    if n > 1000 {
        return Err(format!("at most 1000 timing epochs, got {n}"));
    }
    Ok(n)
}
