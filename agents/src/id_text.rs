//! The text of the runtime's ids: a prefix, `_`, and 128 bits as 22 base-62 digits.
//!
//! Base 62 (`0-9`, `A-Z`, `a-z`, in ASCII order) at a fixed width keeps a time-ordered id
//! (a UUIDv7) sorting as text in time order, in 22 characters where hex takes 32: every request,
//! call and entry holds one, in memory and in every stored row.

/// The digits, in ASCII order, so fixed-width texts sort as their numbers do.
const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// How many digits 128 bits take.
pub(crate) const ID_DIGITS: usize = 22;

/// 62^10, the largest power of 62 under 2^63: 128 bits split into two 10-digit parts and a
/// 2-digit one, so only two of the divisions are 128-bit.
const TEN_DIGITS: u64 = 839_299_365_868_340_224;

/// The 22 digits of `bits`, leading zeros included.
pub(crate) fn digits(bits: u128) -> [u8; ID_DIGITS] {
    let mut out = [b'0'; ID_DIGITS];
    let wide = u128::from(TEN_DIGITS);
    let low = (bits % wide) as u64;
    let rest = bits / wide;
    let middle = (rest % wide) as u64;
    let high = (rest / wide) as u64;
    for (slot, mut part) in [(0..2, high), (2..12, middle), (12..22, low)] {
        for at in slot.rev() {
            out[at] = DIGITS[(part % 62) as usize];
            part /= 62;
        }
    }
    out
}

/// `prefix`, `_` and the 22 base-62 digits of `bits`: how the runtime writes its ids (a
/// UUIDv7's bits), sorting as text in the order of their bits.
pub fn id_text(prefix: &str, bits: u128) -> String {
    let mut text = String::with_capacity(prefix.len() + 1 + ID_DIGITS);
    text.push_str(prefix);
    text.push('_');
    text.extend(digits(bits).iter().map(|&d| char::from(d)));
    text
}

/// The 128 bits of exactly 22 base-62 digits; `None` for any other text, or a number past
/// 128 bits, so that [`digits`] gives back exactly the text read.
pub(crate) fn bits_of(text: &str) -> Option<u128> {
    let text = text.as_bytes();
    if text.len() != ID_DIGITS {
        return None;
    }
    let value = |digits: &[u8]| {
        digits.iter().try_fold(0u64, |acc, &d| {
            let digit = match d {
                b'0'..=b'9' => d - b'0',
                b'A'..=b'Z' => d - b'A' + 10,
                b'a'..=b'z' => d - b'a' + 36,
                _ => return None,
            };
            Some(acc * 62 + u64::from(digit))
        })
    };
    let (high, middle, low) = (
        value(&text[..2])?,
        value(&text[2..12])?,
        value(&text[12..])?,
    );
    let wide = u128::from(TEN_DIGITS);
    u128::from(high)
        .checked_mul(wide * wide)?
        .checked_add(u128::from(middle) * wide)?
        .checked_add(u128::from(low))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_read_back_exactly_at_a_fixed_width() {
        for bits in [0, 1, 61, 62, u128::from(u64::MAX), u128::MAX - 1, u128::MAX] {
            let text = digits(bits);
            assert_eq!(text.len(), ID_DIGITS);
            let text = std::str::from_utf8(&text).expect("ascii");
            assert_eq!(bits_of(text), Some(bits), "{text}");
        }
        assert_eq!(&digits(0), b"0000000000000000000000");
        assert_eq!(&digits(61), b"000000000000000000000z");
        assert_eq!(&digits(62), b"0000000000000000000010");
        assert_eq!(&digits(u128::MAX), b"7n42DGM5Tflk9n8mt7Fhc7");
    }

    #[test]
    fn texts_sort_as_their_bits() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834_u128;
        let mut pairs = Vec::new();
        for _ in 0..1_000 {
            seed = seed
                .wrapping_mul(0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645)
                .wrapping_add(1);
            pairs.push((seed, digits(seed)));
        }
        let mut by_bits = pairs.clone();
        by_bits.sort_by_key(|p| p.0);
        pairs.sort_by_key(|a| a.1);
        assert_eq!(pairs, by_bits);
    }

    #[test]
    fn anything_else_is_not_an_id() {
        for text in [
            "",
            "000000000000000000000",
            "00000000000000000000000",
            "7n42DGM5Tflk9n8mt7Fhc8",
            "zzzzzzzzzzzzzzzzzzzzzz",
            "000000000000000000000_",
            "00000000000000000000-0",
        ] {
            assert_eq!(bits_of(text), None, "{text}");
        }
    }

    #[test]
    fn an_id_is_its_prefix_and_digits() {
        assert_eq!(id_text("call", 62), "call_0000000000000000000010");
    }
}
