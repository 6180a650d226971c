//! Lowercase hexadecimal text of bytes: hashes, ids and signatures as logs, headers and
//! signing strings spell them.
//!
//! One function where nine places each had a copy (`format!` of each byte, a string
//! allocated per byte): two digits a byte from a table into a string sized once. Measured
//! under `dst serve`'s load, where each request writes two SHA-256s this way, the
//! difference is within the noise (issue 41, eleventh round).

/// The digits, by value.
const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lowercase hex, two digits a byte (`[0x0a, 0xff]` is `"0aff"`).
pub fn lower(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for &byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value reads as `format!("{:02x}")` writes it, alone and in a run; no
    /// bytes are no text.
    #[test]
    fn every_byte_is_two_lowercase_digits() {
        let all: Vec<u8> = (0..=255).collect();
        for &byte in &all {
            assert_eq!(lower(&[byte]), format!("{byte:02x}"), "{byte}");
        }
        let expected: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(lower(&all), expected);
        assert_eq!(lower(&[0x0a, 0xff]), "0aff");
        assert_eq!(lower(&[]), "");
    }
}
