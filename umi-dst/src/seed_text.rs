//! A seed as text: the one parser every place that reads a seed uses (`DST_SEED`, the
//! seed corpus, the `dst` command's flags, `dst serve`'s paths and headers), so they accept
//! the same forms. It sits below both the corpus and the simulation settings, which use it.
//!
//! Public for tools of your own (a CLI, a server) that take a seed: they then accept
//! exactly what `DST_SEED` and the `dst` command accept.

/// Parses a seed: decimal, or hex with a `0x` prefix; surrounding spaces ignored.
pub fn parse_seed(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse::<u64>(),
    };
    parsed.map_err(|error| {
        let kind = match error.kind() {
            std::num::IntErrorKind::PosOverflow => "is larger than the largest seed",
            std::num::IntErrorKind::Empty => "is empty",
            _ => "is not a seed",
        };
        format!("{kind} (expected a decimal or 0x-hex integer in 0..=18446744073709551615)")
    })
}
