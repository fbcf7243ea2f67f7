//! More than one card: data parallel (DDP), sharded (ZeRO-1, -2, -3 / FSDP) training over a
//! group of devices, each with its own allocator, capacity and trace.
//!
//! Every card runs the single-card step of [`crate::mlp`] on its share of the batch; a
//! scheme adds its memory at the hook points PyTorch's wrappers use
//! ([`crate::mlp::hooks`]). The cards run one after another within each phase of a step
//! (forward and backward on every card, then the collectives, then every card's update),
//! which gives each card exactly the timeline it has when they run in lockstep: a card's
//! memory depends only on its own allocations. Communication is simulated in-process
//! ([`comm`]) and its bytes counted per card.

mod category;
mod comm;
mod ddp;
mod fsdp;
mod group;
mod measure;
mod pipeline;
mod scheme;
mod zero1;

pub use category::{Category, CategoryBytes};
pub use comm::CommBytes;
pub use group::{CardFailure, Group, GroupStep};
pub use measure::{
    CardMemory, GroupMemory, fewest_cards, fewest_cards_by, measure_group, measure_group_with,
};
pub use pipeline::{BACKWARD_COST, MICRO_BATCHES_PER_STAGE, Schedule, bubble, stage_layers};
pub use scheme::Scheme;
pub use zero1::owned_count as zero1_owned;

#[cfg(all(test, feature = "cpu"))]
mod tests;
