//! The training setups the exercises talk about, in plain fields a learner can read.

use gpumem::mlp::MlpConfig;
use gpumem::size::format_bytes;
use std::fmt;

// ANCHOR: setup
/// Which optimizer trains the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    /// Plain SGD: no state beyond the gradients.
    Sgd,
    /// Adam: two extra values per parameter.
    Adam,
}

/// A network and how it is trained: `inputs → layers × width (ReLU) → classes`,
/// `batch` rows per step, float32 everywhere (the labels are int64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    pub inputs: u64,
    pub width: u64,
    pub layers: u64,
    pub classes: u64,
    pub batch: u64,
    pub optimizer: Opt,
}
// ANCHOR_END: setup

impl Setup {
    /// The lesson's data (2 features, 2 classes) with the given network and batch.
    pub fn lesson(width: u64, layers: u64, batch: u64, optimizer: Opt) -> Setup {
        Setup {
            inputs: 2,
            width,
            layers,
            classes: 2,
            batch,
            optimizer,
        }
    }

    /// The engine's configuration for this setup.
    pub fn config(&self) -> MlpConfig {
        MlpConfig {
            inputs: self.inputs,
            hidden: self.width,
            layers: self.layers,
            classes: self.classes,
            optimizer: crate::measure::optimizer(self.optimizer == Opt::Adam),
            strategy: Default::default(),
        }
    }
}

impl fmt::Display for Setup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} hidden layer{} of width {}, batch {}, {:?}",
            self.layers,
            if self.layers == 1 { "" } else { "s" },
            self.width,
            self.batch,
            self.optimizer
        )
    }
}

/// `on a 15.90 GiB card`.
pub fn card(bytes: u64) -> String {
    format!("on a {} card", format_bytes(bytes))
}

#[cfg(test)]
mod tests {
    /// Columns of Challenge 1's Rust code block (measured in headless Chromium at 1200 px:
    /// 689 px of text at 8.4 px a column of 14 px Source Code Pro); a longer line scrolls.
    const PAGE_COLUMNS: usize = 82;

    /// The `setup` region Challenge 1's page includes reads without scrolling sideways. (The
    /// anchors are spelt in two pieces here, or mdBook would include this test too.)
    #[test]
    fn the_setup_region_fits_the_pages_code_block() {
        let text = include_str!("setup.rs");
        let region = text
            .split(concat!("// ANCHOR", ": setup\n"))
            .nth(1)
            .and_then(|rest| rest.split(concat!("// ANCHOR_END", ": setup")).next())
            .expect("setup.rs anchors its setup region");
        for line in region.lines() {
            assert!(
                line.chars().count() <= PAGE_COLUMNS,
                "{} columns: {line}",
                line.chars().count()
            );
        }
    }
}
