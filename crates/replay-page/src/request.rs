//! The page's fields, as text, read by the same parsers the command line's flags use
//! (`gpumem::parse`, the settings' `FromStr`): a value `memviz replay` refuses, the page
//! refuses with the same words, after the flag's name.

use gpumem::alloc_conf::{AllocConf, Overrides};
use gpumem::lesson::CardChoice;
use gpumem::parse;
use gpumem_replay::ReplaySettings;
use serde::{Deserialize, Serialize};

/// What the page asks: each field is what the learner typed or picked, empty when unset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Request {
    /// The file's name, as the report calls it.
    pub name: String,
    /// `--card`: `ideal`, `lesson` or a size (empty: `ideal`).
    pub card: String,
    /// `--context-memory`: a size.
    pub context_memory: String,
    /// `--torch`: a version.
    pub torch: String,
    /// `--compute-capability`: X.Y.
    pub compute_capability: String,
    /// `--alloc-conf`: PYTORCH_CUDA_ALLOC_CONF's syntax.
    pub alloc_conf: String,
    /// `--max-split-size`: a size.
    pub max_split_size: String,
    /// `--gc-threshold`: a fraction.
    pub gc_threshold: String,
    /// `--memory-fraction`: a fraction.
    pub memory_fraction: String,
    /// `--expandable-segments`.
    pub expandable_segments: bool,
    /// `--no-caching`.
    pub no_caching: bool,
    /// `--batch`: a whole number.
    pub batch: String,
    /// `--largest-batch`.
    pub largest_batch: bool,
    /// The page's default: `--largest-batch` where the file allows it (a recording whose
    /// bytes are affine in the batch), skipped with the reason elsewhere.
    pub largest_batch_when_possible: bool,
    /// `--device`: the device whose trace to replay.
    pub device: String,
    /// `--frames`: stack frames in the text (default 6, as the command line's).
    pub frames: String,
}

/// How the command line starts: memviz built and run by cargo.
pub const MEMVIZ: &str = "cargo run --release -p memviz --";

/// A field's value, or None when empty.
fn given(s: &str) -> Option<&str> {
    Some(s.trim()).filter(|t| !t.is_empty())
}

/// `field` read by `parse`, its error after the flag's name.
fn read<T>(
    flag: &str,
    field: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Option<T>, String> {
    given(field)
        .map(|t| parse(t).map_err(|e| format!("--{flag} {t}: {e}")))
        .transpose()
}

/// A `FromStr` value read as [`read`] reads.
fn typed<T: std::str::FromStr>(flag: &str, field: &str) -> Result<Option<T>, String>
where
    T::Err: std::fmt::Display,
{
    read(flag, field, |t| t.parse::<T>().map_err(|e| e.to_string()))
}

impl Request {
    /// The replay's settings, or the first field the command line would refuse.
    pub fn settings(&self) -> Result<ReplaySettings, String> {
        let allocator = Overrides {
            alloc_conf: typed::<AllocConf>("alloc-conf", &self.alloc_conf)?,
            max_split_size: read(
                "max-split-size",
                &self.max_split_size,
                parse::max_split_size,
            )?,
            gc_threshold: read("gc-threshold", &self.gc_threshold, parse::gc_threshold)?,
            memory_fraction: read(
                "memory-fraction",
                &self.memory_fraction,
                parse::memory_fraction,
            )?,
            expandable_segments: self.expandable_segments,
            no_caching: self.no_caching,
        };
        Ok(ReplaySettings {
            name: self.name.clone(),
            card: typed::<CardChoice>("card", &self.card)?.unwrap_or_default(),
            context_memory: read("context-memory", &self.context_memory, parse::size)?,
            torch: typed("torch", &self.torch)?,
            compute_capability: typed("compute-capability", &self.compute_capability)?,
            allocator,
            batch: read("batch", &self.batch, parse::positive)?,
            largest_batch: self.largest_batch,
            device: typed("device", &self.device)?,
            keep_snapshot: false,
        })
    }

    /// How many stack frames the text shows.
    pub fn frames(&self) -> Result<usize, String> {
        Ok(typed::<usize>("frames", &self.frames)?.unwrap_or(gpumem_replay::DEFAULT_FRAMES))
    }

    /// The command line's words after [`MEMVIZ`]: `replay NAME` and the flags set.
    pub fn args(&self) -> Vec<String> {
        let mut words = vec!["replay".to_string(), self.name.clone()];
        let valued = [
            ("card", &self.card),
            ("context-memory", &self.context_memory),
            ("torch", &self.torch),
            ("compute-capability", &self.compute_capability),
            ("alloc-conf", &self.alloc_conf),
            ("max-split-size", &self.max_split_size),
            ("gc-threshold", &self.gc_threshold),
            ("memory-fraction", &self.memory_fraction),
            ("batch", &self.batch),
            ("device", &self.device),
            ("frames", &self.frames),
        ];
        for (flag, value) in valued {
            if let Some(v) = given(value) {
                words.push(format!("--{flag}"));
                words.push(v.to_string());
            }
        }
        let switches = [
            ("expandable-segments", self.expandable_segments),
            ("no-caching", self.no_caching),
            ("largest-batch", self.largest_batch),
        ];
        words.extend(
            switches
                .iter()
                .filter(|s| s.1)
                .map(|s| format!("--{}", s.0)),
        );
        words
    }

    /// The same question as a shell line, as it runs from the repository's root (where
    /// memviz is not on the path): [`MEMVIZ`] and [`Request::args`], quoted.
    pub fn command_line(&self) -> String {
        let quoted: Vec<String> = self.args().iter().map(|w| quote(w)).collect();
        format!("{MEMVIZ} {}", quoted.join(" "))
    }
}

/// A word as a POSIX shell reads it back: bare when safe, else in single quotes.
fn quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_.,:/=+@%".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_fields_are_the_command_lines_defaults() {
        let s = Request::default().settings().unwrap();
        assert_eq!(s, ReplaySettings::default());
    }

    #[test]
    fn a_bad_field_is_refused_with_its_flag_and_the_parsers_words() {
        let card = Request {
            card: "0".into(),
            ..Request::default()
        };
        let e = card.settings().unwrap_err();
        assert!(e.starts_with("--card 0: a card of 0 bytes"), "{e}");
        let batch = Request {
            batch: "-4".into(),
            ..Request::default()
        };
        assert_eq!(
            batch.settings().unwrap_err(),
            "--batch -4: must be at least 1, got -4"
        );
        let split = Request {
            max_split_size: "1MiB".into(),
            ..Request::default()
        };
        assert!(
            split
                .settings()
                .unwrap_err()
                .starts_with("--max-split-size 1MiB: ")
        );
        let torch = Request {
            torch: "two".into(),
            ..Request::default()
        };
        assert!(torch.settings().unwrap_err().starts_with("--torch two: "));
    }

    #[test]
    fn the_command_line_quotes_the_words_memviz_is_given() {
        let r = Request {
            name: "my run's.pickle".into(),
            card: "80 GiB".into(),
            alloc_conf: "expandable_segments:True".into(),
            largest_batch: true,
            ..Request::default()
        };
        let line = r.command_line();
        assert_eq!(
            line,
            r"cargo run --release -p memviz -- replay 'my run'\''s.pickle' --card '80 GiB' --alloc-conf expandable_segments:True --largest-batch"
        );
        assert_eq!(
            r.args(),
            [
                "replay",
                "my run's.pickle",
                "--card",
                "80 GiB",
                "--alloc-conf",
                "expandable_segments:True",
                "--largest-batch"
            ]
        );
    }
}
