//! What the flags describe, made once at the command line: the network, valid, at its batch
//! in rows — at least one, at most the training set — with the notice a clamped `--batch`
//! prints. A demo passes it down; nothing below checks the batch or the network again.

use gpumem::estimate::StepSetup;

/// The network and the batch of [`crate::ModelArgs::setup`].
#[derive(Debug, Clone)]
pub struct ModelSetup {
    /// The network at its batch, as the engine takes it.
    pub step: StepSetup,
    /// Why the batch is smaller than `--batch` asked (the training set has fewer rows).
    pub notice: Option<String>,
}
