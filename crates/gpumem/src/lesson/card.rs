//! The cards the engine emulates: the **ideal** card, whose 15.90 GiB hold nothing but tensors
//! (what the equation counts), and **the lesson's card as the lesson saw it**, which also held
//! the memory its message leaves unexplained (the CUDA context and the like, outside the
//! allocator) and the cuBLAS workspaces its PyTorch took through the allocator.

use super::CARD_BYTES;
use super::message::{hundredths_arg, lesson_figures};
use crate::cublas::{DEFAULT_LT_WORKSPACE, TorchRules, WorkspaceRules, default_cublas_workspace};
use crate::size::{format_bytes, parse_bytes};
use std::fmt;
use std::str::FromStr;

/// The lesson's PyTorch, judged by its message's wording (PyTorch up to 2.0 wrote "reserved in
/// total by PyTorch"): an input we chose from that evidence.
pub const LESSON_TORCH: TorchRules = TorchRules::V2_0;

/// The lesson's card's compute capability: the lesson does not name its card; every
/// generation before Hopper (9.0) gets the same workspaces, so we chose Volta's, 7.0.
pub const LESSON_COMPUTE_CAPABILITY: (u32, u32) = (7, 0);

/// A named card preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Card {
    /// 15.90 GiB, all of it for tensors: no context, no workspaces.
    #[default]
    Ideal,
    /// 15.90 GiB less what the lesson's message shows outside the allocator, with the lesson's
    /// PyTorch's cuBLAS workspaces.
    Lesson,
}

impl Card {
    pub const ALL: [Card; 2] = [Card::Ideal, Card::Lesson];

    /// The card's capacity: the lesson's message's total, for both.
    pub fn capacity(self) -> u64 {
        CARD_BYTES
    }

    /// Memory outside the allocator: none on the ideal card; on the lesson's, its message's
    /// total − free − reserved (0.72 GiB), read as the `--context-memory` flag reads it.
    pub fn outside(self) -> u64 {
        match self {
            Card::Ideal => 0,
            Card::Lesson => lesson_outside(),
        }
    }

    /// The workspaces the card's matrix products take through the allocator.
    pub fn workspaces(self) -> WorkspaceRules {
        match self {
            Card::Ideal => WorkspaceRules::NONE,
            Card::Lesson => {
                let (major, minor) = LESSON_COMPUTE_CAPABILITY;
                WorkspaceRules::for_torch(
                    LESSON_TORCH,
                    false,
                    default_cublas_workspace(LESSON_TORCH, major, minor),
                    DEFAULT_LT_WORKSPACE,
                )
            }
        }
    }

    /// One line for outputs and pages: which card, and what it holds besides tensors.
    pub fn describe(self) -> String {
        match self {
            Card::Ideal => format!(
                "the ideal card: {}, all of it for tensors",
                format_bytes(self.capacity())
            ),
            Card::Lesson => format!(
                "the lesson's card: {}, {} of it outside the allocator, and PyTorch 2.0's \
                 cuBLAS workspaces",
                format_bytes(self.capacity()),
                format_bytes(self.outside())
            ),
        }
    }
}

/// The lesson's memory outside the allocator, in bytes.
fn lesson_outside() -> u64 {
    // The message is a constant, tested to parse (`message::tests`); 0 if it were edited badly.
    lesson_figures()
        .and_then(|l| l.outside())
        .ok()
        .and_then(|h| parse_bytes(&hundredths_arg(h)).ok())
        .unwrap_or(0)
}

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Card::Ideal => "ideal",
            Card::Lesson => "lesson",
        })
    }
}

impl FromStr for Card {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "ideal" => Ok(Card::Ideal),
            "lesson" => Ok(Card::Lesson),
            other => Err(format!("unknown card `{other}` (ideal or lesson)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lessons_card_holds_what_its_message_implies() {
        // 0.72 GiB = 773,094,113.28 B, as `--context-memory 0.72GiB` reads it.
        assert_eq!(Card::Lesson.outside(), 773_094_113);
        assert_eq!(Card::Ideal.outside(), 0);
        let w = Card::Lesson.workspaces();
        assert_eq!((w.cublas, w.lt, w.lt_per_call), (8_519_680, 1 << 20, true));
        assert!(Card::Ideal.workspaces().is_none());
        for c in Card::ALL {
            assert_eq!(c.to_string().parse(), Ok(c));
            assert!(c.describe().contains("15.90 GiB"));
        }
        assert!(
            "huge"
                .parse::<Card>()
                .unwrap_err()
                .contains("ideal or lesson")
        );
    }
}
