//! Settings as people type them — a flag's value on the command line, a field in the book's
//! page — parsed and checked in one place, so both doors refuse the same input with the
//! same words.

use crate::alloc::{
    MaxSplitMinimum, check_gc_threshold, check_max_split_size, check_memory_fraction,
};
use crate::size::parse_bytes;
use std::num::{IntErrorKind, NonZeroU64};

/// A whole number of at least 1, with a message that says so.
pub fn positive(s: &str) -> Result<u64, String> {
    count(s).map(NonZeroU64::get)
}

/// [`positive`] into a type that cannot be 0, for what later arithmetic divides by or
/// resolves against.
pub fn count(s: &str) -> Result<NonZeroU64, String> {
    let t = s.trim();
    match t.parse::<NonZeroU64>() {
        Ok(n) => Ok(n),
        Err(e) if *e.kind() == IntErrorKind::Zero => Err("must be at least 1, got 0".into()),
        Err(_) if t.starts_with('-') => Err(format!("must be at least 1, got {t}")),
        Err(_) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => Err(format!(
            "{t} is too large to count (the limit is {})",
            u64::MAX
        )),
        Err(_) => Err(format!("`{t}` is not a whole number")),
    }
}

/// A size in bytes (`512MiB`, `0.72 GiB`, `1e9`); whether it fits a card is checked later.
pub fn size(s: &str) -> Result<u64, String> {
    parse_bytes(s).map_err(|e| e.to_string())
}

/// A number, or the setting's own words for what it is.
fn number(s: &str, what: &str) -> Result<f64, String> {
    let t = s.trim();
    t.parse::<f64>()
        .map_err(|_| format!("`{t}` is not a number: {what}"))
}

/// A fraction from 0 to 1, as `set_per_process_memory_fraction` accepts.
pub fn memory_fraction(s: &str) -> Result<f64, String> {
    let v = number(
        s,
        "the memory fraction is a share of the card from 0 to 1, e.g. 0.5",
    )?;
    check_memory_fraction(v).map_err(|e| e.to_string())
}

/// At least 20 MiB, as PyTorch requires of `max_split_size_mb` (before 2.9: more than 20,
/// checked against the version once it is known).
pub fn max_split_size(s: &str) -> Result<u64, String> {
    let bytes = size(s)?;
    check_max_split_size(bytes, MaxSplitMinimum::AtLeast).map_err(|e| e.to_string())
}

/// A fraction strictly between 0 and 1.
pub fn gc_threshold(s: &str) -> Result<f64, String> {
    let v = number(
        s,
        "the garbage collection threshold is a fraction between 0 and 1, e.g. 0.8",
    )?;
    check_gc_threshold(v).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_refuse_zero_negative_overflow_and_words() {
        assert_eq!(positive(" 12 "), Ok(12));
        assert_eq!(positive("0"), Err("must be at least 1, got 0".into()));
        assert_eq!(positive("-3"), Err("must be at least 1, got -3".into()));
        assert!(
            positive("99999999999999999999")
                .unwrap_err()
                .contains("too large")
        );
        assert!(positive("ten").unwrap_err().contains("not a whole number"));
    }

    #[test]
    fn allocator_settings_are_checked_as_pytorch_checks_them() {
        assert_eq!(max_split_size("20MiB"), Ok(20 << 20));
        assert!(max_split_size("19MiB").is_err());
        assert!(max_split_size("lots").is_err());
        assert_eq!(memory_fraction("0.5"), Ok(0.5));
        assert!(memory_fraction("1.5").is_err());
        assert!(gc_threshold("1").is_err());
        assert!(gc_threshold("x").unwrap_err().contains("between 0 and 1"));
        assert_eq!(size("1KiB"), Ok(1024));
    }
}
