//! What a replay is asked ([`ReplaySettings`], plain values: the command line's flags or the
//! page's fields), and the card, allocator and PyTorch it resolves to for one snapshot.

use crate::engine::ReplayCard;
use crate::error::{ReplayError, Result};
use crate::notes::Note;
use crate::source::{Kind, Plan};
use gpumem::alloc::AllocatorConfig;
use gpumem::alloc_conf::{self, Overrides};
use gpumem::cublas::WorkspaceRules;
use gpumem::lesson::{Card as Preset, CardChoice};
use gpumem::size::format_bytes;
use gpumem::snapshot::Snapshot;
use gpumem::versions::{ComputeCapability, DEFAULT_COMPUTE_CAPABILITY, KNOWN, Rules, TorchVersion};

/// A replay's question: the card, the allocator's settings, the PyTorch, the batch.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplaySettings {
    /// What the report calls the snapshot (its file, as the caller read it).
    pub name: String,
    /// The card: a preset (`ideal`, `lesson`) or a size.
    pub card: CardChoice,
    /// Memory outside the allocator (default: the card's).
    pub context_memory: Option<u64>,
    /// The PyTorch whose rules apply (default: the card's, or the recording's).
    pub torch: Option<TorchVersion>,
    /// Sizes the workspaces added to a recorded trace (default: the card the recording was
    /// made for, else [`DEFAULT_COMPUTE_CAPABILITY`]).
    pub compute_capability: Option<ComputeCapability>,
    /// The allocator's settings over the snapshot's own.
    pub allocator: Overrides,
    /// Replay at this batch (a recorded trace whose bytes are affine in the batch).
    pub batch: Option<u64>,
    /// Also search the largest batch that fits.
    pub largest_batch: bool,
    /// The device whose trace to replay, when the snapshot has several.
    pub device: Option<i64>,
    /// Keep the replayed run as a snapshot in the report (the caller writes it).
    pub keep_snapshot: bool,
}

impl Default for ReplaySettings {
    /// The ideal card, the snapshot's own settings, the recorded batch.
    fn default() -> Self {
        ReplaySettings {
            name: String::new(),
            card: CardChoice::Preset(Preset::Ideal),
            context_memory: None,
            torch: None,
            compute_capability: None,
            allocator: Overrides::default(),
            batch: None,
            largest_batch: false,
            device: None,
            keep_snapshot: false,
        }
    }
}

/// Everything the replay was asked, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    pub card: ReplayCard,
    pub card_words: String,
    pub capacity: u64,
    pub torch: Option<Rules>,
    /// Where the version came from, in words.
    pub torch_from: String,
    pub workspaces: WorkspaceRules,
    /// The card that confirmed those workspace rules, in words (None: from the source only).
    pub workspaces_measured: Option<String>,
    pub alloc_conf: String,
    pub notes: Vec<Note>,
}

fn preset_name(p: Preset) -> &'static str {
    match p {
        Preset::Ideal => "ideal",
        Preset::Lesson => "lesson's",
    }
}

impl ReplaySettings {
    /// The PyTorch whose rules apply, and why.
    fn rules(&self, snap: &Snapshot) -> (Option<Rules>, String) {
        if let Some(v) = self.torch {
            return (Some(Rules::of(v)), "--torch".into());
        }
        match self.card {
            CardChoice::Preset(p) => (p.torch(), format!("the {} card's", preset_name(p))),
            CardChoice::Bytes(_) => match snap.recorder.as_ref() {
                Some(r) => match r.torch.parse::<TorchVersion>() {
                    Ok(v) => (Some(Rules::of(v)), "the recording's".into()),
                    Err(_) => (None, "none known".into()),
                },
                None => (None, "none asked".into()),
            },
        }
    }

    fn card_words(&self) -> String {
        let capacity = self.card.capacity();
        match self.card {
            CardChoice::Preset(Preset::Ideal) => {
                format!("the ideal card: {}", format_bytes(capacity))
            }
            CardChoice::Preset(Preset::Lesson) => {
                format!("the lesson's card: {}", format_bytes(capacity))
            }
            CardChoice::Bytes(b) => format_bytes(b),
        }
    }

    /// Resolves the card, the settings and the version for `snap` and its `plan`.
    pub(crate) fn setup(&self, snap: &Snapshot, plan: &Plan) -> Result<Setup> {
        let (capacity, outside) = (self.card.capacity(), self.card.outside());
        let card_words = self.card_words();
        let alloc = &self.allocator;
        let (base, alloc_conf) = match (&alloc.alloc_conf, &snap.allocator_settings) {
            (Some(c), _) => (AllocatorConfig::default(), c.text.clone()),
            (None, Some(s)) => (alloc_conf::from_snapshot(s), s.alloc_conf.clone()),
            (None, None) => (AllocatorConfig::default(), String::new()),
        };
        let mut notes: Vec<Note> = alloc.conf_notes().into_iter().map(Note::Setting).collect();
        let mut config = alloc.over(base);
        config.capacity = Some(capacity);
        config.context_memory = self.context_memory.unwrap_or(outside);
        let (torch, torch_from) = self.rules(snap);
        let split = gpumem::versions::max_split_minimum(torch.map(|r| r.asked));
        config.validate_with(split).map_err(|e| {
            ReplayError::Settings(format!("the card and settings: {card_words}: {e}"))
        })?;
        let latest = KNOWN[KNOWN.len() - 1];
        let release = torch.map_or(latest, |r| r.release);
        let recorded_for = snap
            .recorder
            .as_ref()
            .and_then(|r| r.card_capability.parse::<ComputeCapability>().ok());
        let capability = self
            .compute_capability
            .or(recorded_for)
            .unwrap_or(DEFAULT_COMPUTE_CAPABILITY);
        match (self.compute_capability, recorded_for) {
            (None, Some(cc)) if plan.kind == Kind::Recorded => {
                notes.push(Note::CapabilityOfRecording(cc))
            }
            (Some(asked), Some(cc)) if asked != cc && plan.kind == Kind::Recorded => {
                notes.push(Note::CapabilityNotRecording {
                    asked,
                    recorded: cc,
                })
            }
            _ => {}
        }
        let workspaces = match (plan.kind, torch) {
            (Kind::Recorded, Some(r)) => r.workspaces(capability),
            _ => WorkspaceRules::NONE,
        };
        if plan.kind == Kind::Gpu && self.torch.is_some() {
            notes.push(Note::TorchOnGpuTrace);
        }
        if let Some(note) = torch.and_then(|r| r.note()) {
            notes.push(Note::Rules(note));
        }
        let recorded_with = snap.recorder.as_ref().map(|r| r.torch.as_str());
        if let (Some(r), Some(with)) = (torch, recorded_with)
            && with.parse::<TorchVersion>().ok() != Some(r.asked)
        {
            notes.push(Note::RecordedWith {
                with: with.to_string(),
                asked: r.asked,
            });
        }
        if self.compute_capability.is_some() && plan.kind == Kind::Gpu {
            notes.push(Note::CapabilityOnGpuTrace);
        }
        Ok(Setup {
            card: ReplayCard {
                config,
                message: release.oom_message,
                exception: release.exception,
            },
            card_words,
            capacity,
            torch,
            torch_from,
            workspaces,
            workspaces_measured: torch
                .and_then(|r| r.measured_on(capability))
                .map(|m| format!("an {} with PyTorch {}", m.card, m.torch)),
            alloc_conf,
            notes,
        })
    }
}
