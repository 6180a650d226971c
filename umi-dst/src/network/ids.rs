//! Identifiers and stamps as servers write them, drawn from the seed: completion and
//! call ids, fingerprints, request ids, obfuscation padding.

use crate::rng::DeterministicRng;

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &[u8] = b"0123456789abcdef";

/// `len` characters of `alphabet`.
pub(crate) fn chars(rng: &mut DeterministicRng, alphabet: &[u8], len: usize) -> String {
    (0..len)
        .map(|_| char::from(alphabet[rng.index(alphabet.len())]))
        .collect()
}

/// Letters and digits.
pub(crate) fn alnum(rng: &mut DeterministicRng, len: usize) -> String {
    chars(rng, ALNUM, len)
}

/// Lowercase hex.
pub(crate) fn hex(rng: &mut DeterministicRng, len: usize) -> String {
    chars(rng, HEX, len)
}

/// A version-4 UUID, lowercase.
pub(crate) fn uuid(rng: &mut DeterministicRng) -> String {
    let h = hex(rng, 32);
    let variant = ["8", "9", "a", "b"][rng.index(4)];
    format!(
        "{}-{}-4{}-{}{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        variant,
        &h[17..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_their_shapes() {
        let mut rng = DeterministicRng::new(7);
        let id = uuid(&mut rng);
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert!(id.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        assert!(
            alnum(&mut rng, 29)
                .chars()
                .all(|c| c.is_ascii_alphanumeric())
        );
        assert_eq!(hex(&mut rng, 10).len(), 10);
    }
}
