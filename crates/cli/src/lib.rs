//! The command-line kit the challenge demos and `memviz` share: their flags, how they open
//! the device, and how they print (tables for people, `--json` for programs, progress bars
//! for long searches), and a demo's transcript when it runs from its library ([`capture`]).

pub mod alloc_args;
pub mod args;
pub mod card_args;
pub mod output;
pub mod setup;
pub mod snapshot_args;
/// Helpers for the demos' own tests (the `testing` feature).
#[cfg(feature = "testing")]
pub mod testing;

pub use alloc_args::AllocatorArgs;
pub use args::{DeviceArgs, ModelArgs, with_defaults};
pub use card_args::CardArgs;
pub use output::{Output, capture, device_line, progress, run_main, run_main_with};
pub use setup::ModelSetup;
pub use snapshot_args::SnapshotArgs;
