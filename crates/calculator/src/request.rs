//! What the learner sets, as the widget sends it, and what it may choose from.

use gpumem::alloc::OomMessage;
use gpumem::data::{FEATURES, LESSON_TRAINING_EVENTS};
use gpumem::lesson::CARD_BYTES;
use gpumem::mlp::{Checkpointing, MAX_LAYERS, MlpConfig, Optimizer, Precision, Strategy};
use gpumem::size::{MemorySpec, format_bytes};
use serde::{Deserialize, Serialize};

/// One calculation: the network, the batch, how the step trades memory for time, the card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Features per row (the lesson's data has 2).
    #[serde(default = "lesson_inputs")]
    pub inputs: u64,
    /// Neurons in every hidden layer.
    pub width: u64,
    /// Hidden layers.
    pub layers: u64,
    pub batch: BatchRows,
    #[serde(default)]
    pub optimizer: OptimizerChoice,
    #[serde(default)]
    pub precision: Precision,
    /// Micro-batches per optimizer step (gradient accumulation); 1 is none.
    #[serde(default = "one")]
    pub accumulation: u64,
    #[serde(default)]
    pub checkpointing: Checkpointing,
    /// `nn.ReLU(inplace=True)`.
    #[serde(default)]
    pub relu_inplace: bool,
    /// The card: a size such as `15.90GiB`, `16282MiB` or `24GB`.
    pub card: String,
    /// What the card holds besides tensors: nothing (`ideal`) or what the lesson's did
    /// (`lesson`: memory outside the allocator, cuBLAS workspaces).
    #[serde(default)]
    pub preset: gpumem::lesson::Card,
    /// Which of PyTorch's out-of-memory sentences to print.
    #[serde(default)]
    pub oom_message: OomMessage,
}

/// The fields that hold whole numbers (`batch` may also be `"all"`).
const WHOLE_NUMBERS: [&str; 5] = ["inputs", "width", "layers", "batch", "accumulation"];

/// Reads a request, saying which field is wrong and why in the page's words (a negative,
/// fractional or too large number, text where a number belongs) rather than serde's.
pub fn parse(json: &str) -> Result<Request, String> {
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| format!("the calculator could not read its input: {e}"))?;
    for field in WHOLE_NUMBERS {
        if let Some(v) = value.get(field) {
            check_whole(field, v)?;
        }
    }
    if let Some(v) = value.get("checkpointing").and_then(|c| c.get("layers")) {
        check_whole("checkpoint segment", v)?;
    }
    serde_json::from_value(value)
        .map_err(|e| format!("the calculator could not read its input: {e}"))
}

fn check_whole(field: &str, v: &serde_json::Value) -> Result<(), String> {
    use serde_json::Value;
    match v {
        Value::Number(n) if n.as_u64().is_some() => Ok(()),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f < 0.0 => Err(format!("{field} cannot be negative, got {n}")),
            Some(f) if f >= crate::js::MAX_SAFE_INTEGER as f64 => {
                Err(crate::js::past_exact_text(&n.to_string()))
            }
            _ => Err(format!("{field} must be a whole number, got {n}")),
        },
        Value::String(s) if field == "batch" && s == "all" => Ok(()),
        other => Err(format!("{field} must be a whole number, got {other}")),
    }
}

/// Rows per step: a number, or the whole training set as the lesson first tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", untagged)]
pub enum BatchRows {
    Rows(u64),
    Whole(WholeSet),
}

/// The string `"all"`: the whole training set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WholeSet {
    All,
}

/// The optimizers whose memory differs: plain SGD keeps no state, momentum one copy of the
/// parameters, Adam two. Learning rates do not change memory, so they are the lesson's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptimizerChoice {
    #[default]
    Sgd,
    SgdMomentum,
    Adam,
}

fn lesson_inputs() -> u64 {
    FEATURES
}

fn one() -> u64 {
    1
}

/// The momentum the `sgd_momentum` choice uses: any non-zero value costs the same memory.
const MOMENTUM: f32 = 0.9;

impl OptimizerChoice {
    fn optimizer(self) -> Optimizer {
        let lr = Optimizer::LESSON.lr();
        match self {
            OptimizerChoice::Sgd => Optimizer::sgd(lr),
            OptimizerChoice::SgdMomentum => Optimizer::Sgd {
                lr,
                momentum: MOMENTUM,
            },
            OptimizerChoice::Adam => Optimizer::adam(lr),
        }
    }
}

impl Request {
    /// The lesson's network (`width` neurons in `layers` hidden layers) on the lesson's card,
    /// trained with plain SGD on `batch` rows.
    pub fn lesson(width: u64, layers: u64, batch: BatchRows) -> Request {
        Request {
            inputs: FEATURES,
            width,
            layers,
            batch,
            optimizer: OptimizerChoice::Sgd,
            precision: Precision::Float32,
            accumulation: 1,
            checkpointing: Checkpointing::Off,
            relu_inplace: false,
            card: MemorySpec::Bytes(CARD_BYTES).to_string(),
            preset: gpumem::lesson::Card::Ideal,
            oom_message: OomMessage::Lesson,
        }
    }

    /// The engine's network and strategy for this request (checked by the engine itself).
    pub fn config(&self) -> MlpConfig {
        let strategy = Strategy {
            precision: self.precision,
            accumulation: self.accumulation,
            checkpointing: self.checkpointing,
            relu_inplace: self.relu_inplace,
            ..Strategy::default()
        };
        let mut config = MlpConfig::lesson(self.width)
            .with_layers(self.layers)
            .with_optimizer(self.optimizer.optimizer())
            .with_strategy(strategy);
        config.inputs = self.inputs;
        // The card's PyTorch: on the lesson's, 1.12's zeroed gradients and for-loops.
        self.preset.config(&config)
    }

    /// Rows per step.
    pub fn rows(&self) -> u64 {
        match self.batch {
            BatchRows::Rows(n) => n,
            BatchRows::Whole(WholeSet::All) => LESSON_TRAINING_EVENTS,
        }
    }

    /// The card's capacity in bytes: a positive size (`native` has no meaning here).
    pub fn capacity(&self) -> Result<u64, String> {
        match self.card.parse::<MemorySpec>() {
            Ok(MemorySpec::Bytes(b)) => Ok(b),
            Ok(MemorySpec::Native) => Err(
                "`native` means the real device, and the calculator has none: give the card's \
                 size, e.g. 16GiB"
                    .into(),
            ),
            Err(e) => Err(format!("the card's size: {e}")),
        }
    }

    /// Refuses a batch of zero rows before the engine does, in the widget's words.
    pub fn check(&self) -> Result<(), String> {
        if self.rows() == 0 {
            return Err("the batch needs at least 1 row, got 0".into());
        }
        Ok(())
    }
}

/// A card the widget offers, by the size its box is sold with.
#[derive(Debug, Clone, Serialize)]
pub struct CardPreset {
    pub label: String,
    /// What the calculator is given (a size it parses).
    pub card: String,
    pub bytes: u64,
}

/// What a card may hold besides tensors ([`gpumem::lesson::Card`]).
#[derive(Debug, Clone, Serialize)]
pub struct HoldsPreset {
    pub preset: gpumem::lesson::Card,
    pub label: String,
}

/// What the widget may offer, from the engine's own constants.
#[derive(Debug, Clone, Serialize)]
pub struct Presets {
    /// The lesson's card first, then cards by nominal size.
    pub cards: Vec<CardPreset>,
    /// Tensors only first, then what the lesson's card held.
    pub holds: Vec<HoldsPreset>,
    /// What a nominal size means here.
    pub nominal_note: String,
    /// Rows of the lesson's training set (`"all"`).
    pub training_rows: u64,
    pub max_layers: u64,
    pub inputs: u64,
}

impl Presets {
    pub fn new() -> Presets {
        let lesson = MemorySpec::Bytes(CARD_BYTES).to_string();
        // The card the widget sends back must parse to the engine's card to the byte:
        // "15.90 GiB" is 419 KiB short of it, so the value is the exact count of bytes.
        let mut cards = vec![CardPreset {
            label: format!("the lesson's card ({lesson})"),
            card: format!("{CARD_BYTES}B"),
            bytes: CARD_BYTES,
        }];
        cards.extend(gpumem::lesson::NOMINAL_GB.iter().map(|&gb| CardPreset {
            label: format!("{gb} GB, taken as {gb} GiB"),
            card: format!("{gb}GiB"),
            bytes: gb << 30,
        }));
        let holds = gpumem::lesson::Card::ALL
            .iter()
            .map(|&preset| HoldsPreset {
                preset,
                label: match preset {
                    gpumem::lesson::Card::Ideal => "nothing (the ideal card)".into(),
                    gpumem::lesson::Card::Lesson => {
                        let outside = gpumem::lesson::lesson_figures()
                            .and_then(|l| l.outside())
                            .map_or(String::new(), |h| {
                                format!(" {}", gpumem::lesson::hundredths_text(h))
                            });
                        format!(
                            "the lesson's:{outside} outside, PyTorch {}",
                            gpumem::lesson::LESSON_TORCH
                        )
                    }
                },
            })
            .collect();
        Presets {
            cards,
            holds,
            nominal_note: format!(
                "A card sold as N GB is taken here as N GiB, a choice of ours: the card reports \
                 somewhat less (the lesson's 16 GB card reported {}), and the CUDA context takes \
                 more before training starts. Type the size your card reports for a closer \
                 answer.",
                format_bytes(CARD_BYTES)
            ),
            training_rows: LESSON_TRAINING_EVENTS,
            max_layers: MAX_LAYERS,
            inputs: FEATURES,
        }
    }
}

impl Default for Presets {
    fn default() -> Self {
        Presets::new()
    }
}
