//! The lesson's fixed inputs, written once: the card it runs out on, a card too large to run
//! out (for measuring what a step needs), and the device the planners use.
//!
//! These are choices, not measurements: the lesson's error message reported a card of
//! "15.90 GiB total capacity", which 16 282 MiB prints as.

use crate::device::{Backend, DeviceOptions};
use crate::size::MemorySpec;

mod card;
mod choice;
mod message;

pub use card::{Card, LESSON_COMPUTE_CAPABILITY, LESSON_TORCH};
pub use choice::CardChoice;
pub use message::{
    FigureError, LESSON_OOM, LessonFigures, hundredths, hundredths_arg, hundredths_text,
    lesson_figures,
};

/// The lesson's card in MiB, as a literal so that [`CARD_ARG`] is built from the same digits.
macro_rules! card_mib {
    () => {
        16_282
    };
}

/// The lesson's card in MiB.
pub const CARD_MIB: u64 = card_mib!();

/// The lesson's card in bytes.
pub const CARD_BYTES: u64 = CARD_MIB << 20;

/// The lesson's card: the engine's default capacity.
pub const CARD: MemorySpec = MemorySpec::Bytes(CARD_BYTES);

/// A card's memory is the lesson's unless said otherwise. The impl lives here, not in
/// `size`, so that the ground floor (`size`, `alloc`) knows nothing of the lesson.
impl Default for MemorySpec {
    fn default() -> Self {
        CARD
    }
}

/// The lesson's card as a command-line value (`--device-memory`'s default).
pub const CARD_ARG: &str = concat!(card_mib!(), "MiB");

/// Card sizes in GB as cards are sold, which the book's widgets offer (inputs we choose, not
/// measurements: a card sold as N GB is taken as N GiB there, and says so).
pub const NOMINAL_GB: [u64; 7] = [8, 12, 16, 24, 40, 48, 80];

/// A card too large to run out (64 PiB): planning on it measures what a step needs.
pub const UNLIMITED_BYTES: u64 = 1 << 56;

/// The device planners use: the `plan` backing (every allocation, no storage, no kernels) on a
/// card of `capacity` bytes, with the default allocator settings.
pub fn planning_device(capacity: u64) -> DeviceOptions {
    DeviceOptions {
        backend: Backend::Plan,
        memory: MemorySpec::Bytes(capacity),
        ..Default::default()
    }
}

/// [`planning_device`] on the ideal card (tensors only).
pub fn planning_on_card() -> DeviceOptions {
    planning_device(CARD_BYTES)
}

/// [`planning_device`] on `card`: its capacity, what it holds outside the allocator, its
/// workspaces.
pub fn planning_on(card: Card) -> DeviceOptions {
    let mut options = planning_device(card.capacity());
    options.allocator.context_memory = card.outside();
    options.cublas = card.workspaces();
    options
}

/// [`planning_device`] on a card too large to run out.
pub fn planning_unlimited() -> DeviceOptions {
    planning_device(UNLIMITED_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_card_prints_as_the_lessons_message() {
        assert_eq!(CARD.to_string(), "15.90 GiB");
        assert_eq!(CARD_ARG.parse::<MemorySpec>(), Ok(CARD));
        assert_eq!(MemorySpec::default(), CARD);
    }

    #[test]
    fn planning_devices_plan() {
        let d = planning_on_card();
        assert_eq!((d.backend, d.memory), (Backend::Plan, CARD));
        assert_eq!(
            planning_unlimited().memory,
            MemorySpec::Bytes(UNLIMITED_BYTES)
        );
    }
}
