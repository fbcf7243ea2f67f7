//! Byte sizes as people type them (`16GiB`, `512MB`, `1e9`) and as PyTorch prints them
//! (`8.74 GiB`, `179.00 KiB`).

use std::fmt;
use std::str::FromStr;

/// The forms [`parse_bytes`] accepts, quoted in every error so a user can fix the input.
pub const ACCEPTED_FORMS: &str = "a whole or decimal number of bytes with an optional unit: \
B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), \
e.g. `16GiB`, `16 GiB`, `512MB`, `1.5GB`, `1e9`";

/// Why a size could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("no size given: expected {ACCEPTED_FORMS}")]
    Empty,
    #[error("`{input}` is not a size: {reason}; expected {ACCEPTED_FORMS}")]
    Invalid { input: String, reason: String },
    #[error("`{input}` is larger than the largest size this program can count (16.00 EiB)")]
    Overflow { input: String },
}

fn invalid(input: &str, reason: impl Into<String>) -> SizeError {
    SizeError::Invalid {
        input: input.to_string(),
        reason: reason.into(),
    }
}

/// The multiplier of a unit suffix, case-insensitively; `None` for an unknown unit.
fn unit_multiplier(unit: &str) -> Option<u64> {
    const KI: u64 = 1 << 10;
    let m = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "kib" => KI,
        "mib" => KI * KI,
        "gib" => KI * KI * KI,
        "tib" => KI * KI * KI * KI,
        _ => return None,
    };
    Some(m)
}

/// Parses a byte count: `16GiB`, `16 GiB`, `512MB`, `1.5GB`, `1e9`, `4096`.
///
/// Fractions are allowed when the result is a whole number of bytes after rounding down
/// (`1.5GB` is 1 500 000 000 B). Zero is a valid size here; callers that need a positive
/// size say so themselves.
pub fn parse_bytes(input: &str) -> Result<u64, SizeError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(SizeError::Empty);
    }
    if s.starts_with('-') {
        return Err(invalid(input, "a size cannot be negative"));
    }
    // Split "1.5e3 GiB" into the number and the unit: the number is the longest prefix
    // made of digits, '.', '+', and an exponent 'e' that is followed by a digit or sign.
    let bytes = s.as_bytes();
    let mut end = 0;
    while end < bytes.len() {
        let c = bytes[end];
        let exponent = (c == b'e' || c == b'E')
            && end > 0
            && bytes
                .get(end + 1)
                .is_some_and(|n| n.is_ascii_digit() || *n == b'+' || *n == b'-');
        let sign_after_exponent =
            (c == b'+' || c == b'-') && end > 0 && matches!(bytes[end - 1], b'e' | b'E');
        if c.is_ascii_digit()
            || c == b'.'
            || exponent
            || sign_after_exponent
            || (c == b'+' && end == 0)
        {
            end += 1;
        } else {
            break;
        }
    }
    let (number, unit) = s.split_at(end);
    let unit = unit.trim();
    if number.is_empty() {
        return Err(invalid(input, "it does not start with a number"));
    }
    let multiplier = unit_multiplier(unit)
        .ok_or_else(|| invalid(input, format!("`{unit}` is not a unit of size")))?;
    // Whole numbers are parsed exactly; anything with a point or exponent goes through f64,
    // which is exact for every size below 2^53 bytes (8 PiB).
    if let Ok(whole) = number.trim_start_matches('+').parse::<u64>() {
        return whole
            .checked_mul(multiplier)
            .ok_or_else(|| SizeError::Overflow {
                input: input.to_string(),
            });
    }
    let value: f64 = number
        .parse()
        .map_err(|_| invalid(input, format!("`{number}` is not a number")))?;
    if !value.is_finite() {
        return Err(SizeError::Overflow {
            input: input.to_string(),
        });
    }
    let total = value * multiplier as f64;
    if total >= u64::MAX as f64 {
        return Err(SizeError::Overflow {
            input: input.to_string(),
        });
    }
    Ok(total.floor() as u64)
}

/// Formats bytes exactly like PyTorch's `format_size` in its out-of-memory message:
/// up to 1024 B in bytes, then KiB, MiB and GiB with two decimals.
pub fn format_bytes(bytes: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    if bytes <= KIB {
        format!("{bytes} bytes")
    } else if bytes <= MIB {
        format!("{:.2} KiB", bytes as f64 / KIB as f64)
    } else if bytes <= GIB {
        format!("{:.2} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{:.2} GiB", bytes as f64 / GIB as f64)
    }
}

/// A byte count that prints like PyTorch (`8.74 GiB`) and parses like [`parse_bytes`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&format_bytes(self.0))
    }
}

impl FromStr for Bytes {
    type Err = SizeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_bytes(s).map(Bytes)
    }
}

/// How much memory the device may use: a fixed capacity, or whatever the backing can get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemorySpec {
    /// An emulated card of this many bytes: allocation beyond it is out of memory.
    Bytes(u64),
    /// The real device: allocate until the backing itself refuses.
    Native,
}

impl fmt::Display for MemorySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemorySpec::Bytes(b) => f.pad(&format_bytes(*b)),
            MemorySpec::Native => f.pad("native"),
        }
    }
}

impl FromStr for MemorySpec {
    type Err = SizeError;
    /// `native`, or a positive size (an empty card can hold nothing, so zero is refused).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().eq_ignore_ascii_case("native") {
            return Ok(MemorySpec::Native);
        }
        match parse_bytes(s)? {
            0 => Err(invalid(s, "a device needs more than 0 bytes of memory")),
            n => Ok(MemorySpec::Bytes(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_people_type() {
        assert_eq!(parse_bytes("16GiB"), Ok(16 << 30));
        assert_eq!(parse_bytes("16 GiB"), Ok(16 << 30));
        assert_eq!(parse_bytes("512MB"), Ok(512_000_000));
        assert_eq!(parse_bytes("1.5GB"), Ok(1_500_000_000));
        assert_eq!(parse_bytes("1e9"), Ok(1_000_000_000));
        assert_eq!(parse_bytes("2.5e3 KiB"), Ok(2_560_000));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("64mib"), Ok(64 << 20));
        assert_eq!(parse_bytes("0"), Ok(0));
    }

    #[test]
    fn refuses_bad_input_naming_it() {
        for bad in [
            "16XB", "-3GB", "", "  ", "GiB", "1.2.3GB", "e9", "16 G iB", "nan", "inf",
        ] {
            let err = parse_bytes(bad).expect_err(bad);
            let msg = err.to_string();
            assert!(
                msg.contains("expected") || msg.contains("largest"),
                "{bad}: {msg}"
            );
            if !bad.trim().is_empty() {
                assert!(
                    msg.contains(bad.trim()) || msg.contains(bad),
                    "{bad}: {msg}"
                );
            }
        }
        assert!(matches!(
            parse_bytes("16XB"),
            Err(SizeError::Invalid { .. })
        ));
        assert!(matches!(parse_bytes(""), Err(SizeError::Empty)));
    }

    #[test]
    fn refuses_overflow() {
        assert!(matches!(
            parse_bytes("99999999999999999999"),
            Err(SizeError::Overflow { .. })
        ));
        assert!(matches!(
            parse_bytes("17179869184GiB"),
            Err(SizeError::Overflow { .. })
        ));
        assert!(matches!(
            parse_bytes("1e30"),
            Err(SizeError::Overflow { .. })
        ));
        assert_eq!(parse_bytes("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn formats_like_pytorch() {
        assert_eq!(format_bytes(512), "512 bytes");
        assert_eq!(format_bytes(1024), "1024 bytes");
        assert_eq!(format_bytes(179 * 1024), "179.00 KiB");
        assert_eq!(format_bytes(20 << 20), "20.00 MiB");
        assert_eq!(format_bytes(1 << 30), "1024.00 MiB");
        // The lesson's full-batch activation: 1 173 000 rows x 2000 floats, in 2 MiB pages.
        assert_eq!(format_bytes(4475 * (2 << 20)), "8.74 GiB");
    }

    #[test]
    fn memory_spec() {
        assert_eq!("native".parse(), Ok(MemorySpec::Native));
        assert_eq!(" Native ".parse(), Ok(MemorySpec::Native));
        assert_eq!("8GiB".parse(), Ok(MemorySpec::Bytes(8 << 30)));
        assert!("0".parse::<MemorySpec>().is_err());
        assert!("16XB".parse::<MemorySpec>().is_err());
    }
}
