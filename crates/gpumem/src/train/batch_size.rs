//! The batch size as the user gives it: a number of rows, or the whole training set.

use std::fmt;
use std::num::{IntErrorKind, NonZeroU64};
use std::str::FromStr;

/// Rows per mini-batch: a number, or the whole training set (`full`). A number is at least 1
/// by its type: parsing refuses 0, and nothing after it checks again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchSize {
    Rows(NonZeroU64),
    Full,
}

impl BatchSize {
    /// The rows per batch for a training set of `available` rows, and a notice when the
    /// requested size was larger than the set (it is then clamped to the whole set).
    pub fn resolve(self, available: NonZeroU64) -> (NonZeroU64, Option<String>) {
        match self {
            BatchSize::Full => (available, None),
            BatchSize::Rows(n) if n > available => (
                available,
                Some(format!(
                    "batch size {n} is larger than the training set ({available} rows); using the whole set as one batch"
                )),
            ),
            BatchSize::Rows(n) => (n, None),
        }
    }
}

impl fmt::Display for BatchSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchSize::Rows(n) => write!(f, "{n}"),
            BatchSize::Full => f.pad("full"),
        }
    }
}

impl FromStr for BatchSize {
    type Err = String;
    /// The one place a batch of 0 rows is refused: every later step takes a [`NonZeroU64`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("full") {
            return Ok(BatchSize::Full);
        }
        match t.parse::<NonZeroU64>() {
            Ok(n) => Ok(BatchSize::Rows(n)),
            Err(e) if *e.kind() == IntErrorKind::Zero => {
                Err("the batch size must be at least 1 (or `full`), got 0".into())
            }
            Err(_) if t.starts_with('-') => {
                Err(format!("the batch size cannot be negative, got `{t}`"))
            }
            Err(_) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
                Err(format!("the batch size `{t}` is too large to count"))
            }
            Err(_) => Err(format!(
                "`{t}` is not a batch size: expected a positive whole number or `full`"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: u64) -> NonZeroU64 {
        NonZeroU64::new(n).unwrap()
    }

    #[test]
    fn batch_sizes_parse_with_clear_errors() {
        assert_eq!("32".parse(), Ok(BatchSize::Rows(rows(32))));
        assert_eq!("full".parse(), Ok(BatchSize::Full));
        assert_eq!(" FULL ".parse(), Ok(BatchSize::Full));
        for (bad, text) in [
            ("0", "at least 1"),
            ("000", "at least 1"),
            ("-1", "negative"),
            ("-0", "negative"),
            ("abc", "not a batch size"),
            ("", "not a batch size"),
            ("99999999999999999999999", "too large"),
        ] {
            let e = bad.parse::<BatchSize>().unwrap_err();
            assert!(e.contains(text), "{bad}: {e}");
        }
    }

    #[test]
    fn oversized_batches_are_clamped_with_a_notice() {
        let hundred = rows(100);
        assert_eq!(BatchSize::Rows(rows(10)).resolve(hundred), (rows(10), None));
        assert_eq!(BatchSize::Full.resolve(hundred), (hundred, None));
        let (resolved, notice) = BatchSize::Rows(rows(500)).resolve(hundred);
        assert_eq!(resolved, hundred);
        assert!(notice.unwrap().contains("larger than the training set"));
    }
}
