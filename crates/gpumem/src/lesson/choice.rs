//! `--card SIZE|ideal|lesson`: a preset card or any card by its memory, parsed once for every
//! program that takes it.

use super::Card;
use crate::size::parse_bytes;
use std::fmt;
use std::str::FromStr;

/// A preset ([`Card`]) or a card of this many bytes, all of them for the allocator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardChoice {
    Preset(Card),
    Bytes(u64),
}

impl Default for CardChoice {
    fn default() -> Self {
        CardChoice::Preset(Card::Ideal)
    }
}

impl CardChoice {
    /// The card's memory.
    pub fn capacity(self) -> u64 {
        match self {
            CardChoice::Preset(p) => p.capacity(),
            CardChoice::Bytes(b) => b,
        }
    }

    /// Memory outside the allocator: the preset's, none on a card given by size.
    pub fn outside(self) -> u64 {
        match self {
            CardChoice::Preset(p) => p.outside(),
            CardChoice::Bytes(_) => 0,
        }
    }
}

impl FromStr for CardChoice {
    type Err = String;

    /// The one place a card of 0 bytes is refused.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Ok(p) = s.parse::<Card>() {
            return Ok(CardChoice::Preset(p));
        }
        match parse_bytes(s) {
            Ok(0) => Err("a card of 0 bytes holds nothing; give its memory, e.g. 80GiB".into()),
            Ok(b) => Ok(CardChoice::Bytes(b)),
            Err(e) => Err(format!("{e} (or `ideal`, `lesson`)")),
        }
    }
}

impl fmt::Display for CardChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CardChoice::Preset(p) => p.fmt(f),
            CardChoice::Bytes(b) => write!(f, "{b}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_is_a_preset_or_a_size_never_zero() {
        assert_eq!("lesson".parse(), Ok(CardChoice::Preset(Card::Lesson)));
        assert_eq!("80GiB".parse(), Ok(CardChoice::Bytes(80 << 30)));
        let zero = "0".parse::<CardChoice>().unwrap_err();
        assert!(zero.contains("0 bytes"), "{zero}");
        let unit = "16XB".parse::<CardChoice>().unwrap_err();
        assert!(
            unit.contains("not a unit") && unit.contains("`ideal`"),
            "{unit}"
        );
        for c in [CardChoice::default(), CardChoice::Bytes(1 << 30)] {
            assert_eq!(c.to_string().parse(), Ok(c));
        }
        assert_eq!(CardChoice::Bytes(5).outside(), 0);
        assert_eq!(
            CardChoice::Preset(Card::Lesson).outside(),
            Card::Lesson.outside()
        );
    }
}
