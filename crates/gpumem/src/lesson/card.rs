//! The cards the engine emulates: the **ideal** card, whose 15.90 GiB hold nothing but tensors
//! (what the equation counts), and **the lesson's card as the lesson saw it**, which also held
//! the memory its message leaves unexplained (the CUDA context, cuBLAS's own workspaces and the
//! like, outside the allocator) and ran the lesson's PyTorch's defaults.

use super::CARD_BYTES;
use super::message::{hundredths_arg, lesson_figures};
use crate::cublas::WorkspaceRules;
use crate::mlp::MlpConfig;
use crate::size::{format_bytes, parse_bytes};
use crate::versions::{ComputeCapability, DEFAULT_COMPUTE_CAPABILITY, Rules, TorchVersion};
use std::fmt;
use std::str::FromStr;

/// The lesson's PyTorch, dated by its message: `RuntimeError: CUDA out of memory.` is what
/// PyTorch up to 1.12 raised (1.13 raises `torch.cuda.OutOfMemoryError`, pytorch#83146, and in
/// the same release takes cuBLAS's workspaces from the caching allocator, pytorch#83461). We
/// take 1.12, the newest release with that message: an input chosen from that evidence.
pub const LESSON_TORCH: TorchVersion = TorchVersion::new(1, 12);

/// The lesson's card's compute capability: the lesson does not name its card, and under 1.12
/// no workspace depends on it; we chose Volta's, 7.0.
pub const LESSON_COMPUTE_CAPABILITY: ComputeCapability = DEFAULT_COMPUTE_CAPABILITY;

/// A named card preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Card {
    /// 15.90 GiB, all of it for tensors: no context, no workspaces.
    #[default]
    Ideal,
    /// 15.90 GiB less what the lesson's message shows outside the allocator, with the lesson's
    /// PyTorch's (1.12's) defaults.
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

    /// The PyTorch whose defaults the card runs: none on the ideal card (PyTorch 2's
    /// `zero_grad()` and `foreach`, nothing but tensors), 1.12 on the lesson's.
    pub fn torch(self) -> Option<Rules> {
        match self {
            Card::Ideal => None,
            Card::Lesson => Some(Rules::of(LESSON_TORCH)),
        }
    }

    /// The workspaces the card's matrix products take through the allocator: none on either
    /// (under 1.12 cuBLAS keeps its own, outside the allocator, within the 0.72 GiB).
    pub fn workspaces(self) -> WorkspaceRules {
        self.torch().map_or(WorkspaceRules::NONE, |r| {
            r.workspaces(LESSON_COMPUTE_CAPABILITY)
        })
    }

    /// `config` as the card's PyTorch runs it by default: what `zero_grad()` does and how the
    /// optimizer loops (the ideal card keeps `config`'s own).
    pub fn config(self, config: &MlpConfig) -> MlpConfig {
        let mut c = config.clone();
        if let Some(r) = self.torch() {
            c.strategy.zero_grad = r.release.zero_grad;
            c.strategy.optimizer_impl = r.release.optimizer_impl;
            c.strategy.foreach_denom = r.release.foreach_denom;
        }
        c
    }

    /// One line for outputs and pages: which card, and what it holds besides tensors.
    pub fn describe(self) -> String {
        match self {
            Card::Ideal => format!(
                "the ideal card: {}, all of it for tensors",
                format_bytes(self.capacity())
            ),
            Card::Lesson => format!(
                "the lesson's card: {}, {} of it outside the allocator, and {}",
                format_bytes(self.capacity()),
                format_bytes(self.outside()),
                Rules::of(LESSON_TORCH).describe()
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
        // PyTorch 1.12: nothing but tensors in the allocator, gradients zeroed, for-loops.
        assert!(Card::Lesson.workspaces().is_none());
        assert!(Card::Ideal.workspaces().is_none());
        let c = Card::Lesson.config(&MlpConfig::lesson(2000));
        assert_eq!(c.strategy.zero_grad, crate::mlp::ZeroGrad::Zero);
        assert_eq!(
            c.strategy.optimizer_impl,
            crate::mlp::OptimizerImpl::ForLoop
        );
        assert_eq!(Card::Ideal.config(&c), c);
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
