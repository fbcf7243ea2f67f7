//! The choices the page offers, from the engine's own constants: the cards the command line
//! takes by name and by size, the PyTorch versions whose rules it knows.

use gpumem::lesson::{CARD_BYTES, Card, NOMINAL_GB};
use gpumem::size::format_bytes;
use gpumem::versions::KNOWN;
use serde::Serialize;

/// A choice of the page's card field: the text sent (what `--card` takes) and its label.
#[derive(Debug, Clone, Serialize)]
pub struct Choice {
    pub value: String,
    pub label: String,
}

/// What the page may offer.
#[derive(Debug, Clone, Serialize)]
pub struct Presets {
    /// The two named cards, then sizes as cards are sold.
    pub cards: Vec<Choice>,
    /// The card the page starts with.
    pub default_card: String,
    /// The PyTorch versions whose rules the replay knows (a version between two takes the
    /// earlier one's).
    pub torch: Vec<String>,
    /// The stack frames the text shows unless asked.
    pub frames: usize,
}

impl Presets {
    pub fn new() -> Presets {
        let lesson = format_bytes(CARD_BYTES);
        let mut cards = vec![
            Choice {
                value: Card::Ideal.to_string(),
                label: format!("ideal ({lesson}, all for tensors)"),
            },
            Choice {
                value: Card::Lesson.to_string(),
                label: format!(
                    "lesson ({lesson} with its context, PyTorch {})",
                    gpumem::lesson::LESSON_TORCH
                ),
            },
        ];
        cards.extend(NOMINAL_GB.iter().map(|gb| Choice {
            value: format!("{gb}GiB"),
            label: format!("{gb} GB, as {gb} GiB"),
        }));
        Presets {
            default_card: format!("{}GiB", NOMINAL_GB[2]),
            cards,
            torch: KNOWN.iter().map(|r| r.version.to_string()).collect(),
            frames: crate::DEFAULT_FRAMES,
        }
    }
}

impl Default for Presets {
    fn default() -> Self {
        Presets::new()
    }
}

/// The presets as JSON.
pub fn json() -> String {
    serde_json::to_string(&Presets::new())
        .unwrap_or_else(|e| crate::refused(&format!("unprintable presets: {e}")).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_card_and_version_offered_is_one_the_command_line_takes() {
        let p = Presets::new();
        for c in &p.cards {
            assert!(
                c.value.parse::<gpumem::lesson::CardChoice>().is_ok(),
                "{}",
                c.value
            );
        }
        assert!(p.cards.iter().any(|c| c.value == p.default_card));
        for t in &p.torch {
            assert!(t.parse::<gpumem::versions::TorchVersion>().is_ok(), "{t}");
        }
        assert_eq!(p.torch.len(), KNOWN.len());
    }
}
