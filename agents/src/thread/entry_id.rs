//! An entry's id, held in 16 bytes.

use std::fmt;
use std::num::NonZeroU64;

use motet_directives::ArcStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::id_text::{bits_of, digits};

/// The prefix of the ids the runtime gives entries (`entry_` and 22 base-62 digits, see
/// [`crate::id_text`]).
const PREFIX: &str = "entry_";

/// An entry's id, unique within its thread and in practice everywhere.
///
/// The runtime's ids (`entry_` followed by a UUIDv7's 128 bits in 22 base-62 digits, see
/// [`id_text`](crate::id_text)) are held as the bits rather than as 28 bytes of text, since
/// every entry of every thread has one; any other id (a test environment's `entry_1`, an
/// imported thread's, one written by an earlier version in hex) is kept as shared text. Either
/// way it reads, prints, compares and serializes as its text, in 16 bytes: the text's variant
/// fits beside the bits' high half, which is never zero for a UUIDv7 (its clock).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct EntryId(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// `entry_` and these 128 bits in base 62, high half first (kept as two halves: an `u128`
    /// would align the id to 16 bytes and leave no room for the other variant's tag).
    Bits(NonZeroU64, u64),
    /// Any other text (and bits whose high half is zero).
    Text(ArcStr),
}

impl EntryId {
    /// The id `text`.
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        match id_bits(&text).and_then(|bits| Some((NonZeroU64::new((bits >> 64) as u64)?, bits))) {
            Some((high, bits)) => Self(Repr::Bits(high, bits as u64)),
            None => Self(Repr::Text(ArcStr::from(text))),
        }
    }
}

/// The 128 bits of `entry_<22 base-62 digits>`; `None` for any other text, which then stays
/// text (so every id prints back exactly as it was given).
fn id_bits(text: &str) -> Option<u128> {
    bits_of(text.strip_prefix(PREFIX)?)
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Bits(high, low) => {
                let digits = digits((u128::from(high.get()) << 64) | u128::from(*low));
                f.write_str(PREFIX)?;
                f.write_str(std::str::from_utf8(&digits).map_err(|_| fmt::Error)?)
            }
            Repr::Text(text) => f.write_str(text),
        }
    }
}

impl fmt::Debug for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

impl PartialEq<str> for EntryId {
    fn eq(&self, other: &str) -> bool {
        match &self.0 {
            Repr::Text(text) => text.as_str() == other,
            Repr::Bits(high, low) => {
                id_bits(other) == Some((u128::from(high.get()) << 64) | u128::from(*low))
            }
        }
    }
}

impl PartialEq<&str> for EntryId {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl From<String> for EntryId {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

impl From<&str> for EntryId {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl Serialize for EntryId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for EntryId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_ids_are_held_as_bits_and_read_back_exactly() {
        let text = crate::id_text("entry", 0x01a2_0ca9_539e_7113_9347_76df_d4e3_a401);
        let id = EntryId::new(text.as_str());
        assert!(matches!(id.0, Repr::Bits(..)));
        assert_eq!(id.to_string(), text);
        assert_eq!(id, text.as_str());
        assert_eq!(
            serde_json::to_string(&id).ok().as_deref(),
            Some(format!("\"{text}\"").as_str())
        );
        let back: EntryId = serde_json::from_str(&format!("\"{text}\"")).expect("a string");
        assert_eq!(back, id);
        // Leading zeros survive, in the low half too; a zero high half is kept as text.
        let zeros = crate::id_text("entry", (1 << 64) | 1);
        assert!(matches!(EntryId::new(zeros.as_str()).0, Repr::Bits(..)));
        assert_eq!(EntryId::new(zeros.as_str()).to_string(), zeros);
        let high_zero = crate::id_text("entry", 1);
        assert!(matches!(EntryId::new(high_zero.as_str()).0, Repr::Text(_)));
        assert_eq!(EntryId::new(high_zero.as_str()).to_string(), high_zero);
        assert_eq!(EntryId::new(high_zero.as_str()), high_zero.as_str());
    }

    #[test]
    fn any_other_id_stays_text() {
        for text in [
            "entry_1",
            "entry_01a20ca9539e7113934776dfd4e3a401",
            "entry_01A20CA9539e711393477",
            "entry_01A20CA9539e71139347761",
            "entry_01A20CA9539e711393477-",
            "entry_7n42DGM5Tflk9n8mt7Fhc8",
            "call_01A20CA9539e7113934776",
            "",
        ] {
            let id = EntryId::new(text);
            assert!(matches!(id.0, Repr::Text(_)), "{text}");
            assert_eq!(id.to_string(), text);
            assert_eq!(id, text);
        }
    }

    #[test]
    fn an_id_is_two_words() {
        assert_eq!(size_of::<EntryId>(), 16);
    }
}
