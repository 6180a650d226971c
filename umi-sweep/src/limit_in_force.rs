//! The address-space limit a sweep's worker process actually runs under, and how a
//! crash message names it.
//!
//! A worker inherits its parent's `RLIMIT_AS` and only ever lowers it to
//! `--seed-memory-max` (`memory_limit::apply`): under an outer limit that is lower
//! already (`prlimit --as=...`, `ulimit -v`, a container's), the outer one is in force,
//! and a seed that runs out of memory met that one. The parent reads back the limit it
//! passes on ([`inherited_bytes`]) when it describes a crash, so the message names the
//! limit the worker had, not the flag's.
//!
//! [`in_force_bytes`] (what a worker sets) and [`describe`] (what a crash says) are
//! pure, so a table test covers every case.

/// The limit a worker sets on itself for `--seed-memory-max` `flag_bytes`: the lower
/// of it and the inherited one (`None`: unlimited).
pub(crate) fn in_force_bytes(flag_bytes: u64, inherited_bytes: Option<u64>) -> u64 {
    inherited_bytes.map_or(flag_bytes, |inherited| flag_bytes.min(inherited))
}

/// The limit in force, as a crash message names it: `--seed-memory-max 4GiB` when the
/// flag's is, `2.8GiB (an outer limit, lower than --seed-memory-max 4GiB)` when an
/// inherited one is lower; `None` without any limit. `flag` is the flag's limit in
/// bytes and as the user typed it.
pub(crate) fn describe(flag: Option<(u64, &str)>, inherited_bytes: Option<u64>) -> Option<String> {
    match (flag, inherited_bytes) {
        (None, None) => None,
        (Some((flag_bytes, text)), Some(outer))
            if in_force_bytes(flag_bytes, Some(outer)) < flag_bytes =>
        {
            Some(format!(
                "{} (an outer limit, lower than --seed-memory-max {text})",
                size_text(outer)
            ))
        }
        (Some((_, text)), _) => Some(format!("--seed-memory-max {text}")),
        (None, Some(outer)) => Some(format!("{} (an outer limit)", size_text(outer))),
    }
}

/// The soft address-space limit of this process, which a worker it starts inherits
/// (`None`: unlimited, or not known on this platform).
pub(crate) fn inherited_bytes() -> Option<u64> {
    #[cfg(unix)]
    {
        let (soft, _) = rlimit::getrlimit(rlimit::Resource::AS).ok()?;
        (soft != rlimit::INFINITY).then_some(soft)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// `bytes` in the largest binary unit it reaches: whole (`4GiB`) or to one decimal
/// (`2.8GiB`).
pub(crate) fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut unit = "B";
    let mut scale = 1u64;
    for (power, name) in (1u32..).zip(UNITS) {
        let next = 1u64 << (10 * power);
        if bytes < next {
            break;
        }
        (unit, scale) = (name, next);
    }
    if bytes.is_multiple_of(scale) {
        format!("{}{unit}", bytes / scale)
    } else {
        let value = bytes as f64 / scale as f64; // a size as people read it
        format!("{value:.1}{unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn the_lower_limit_is_in_force_and_the_message_names_it() {
        let flag = Some((4 * GIB, "4GiB"));
        let cases = [
            (flag, None, Some("--seed-memory-max 4GiB")),
            (flag, Some(8 * GIB), Some("--seed-memory-max 4GiB")),
            (flag, Some(4 * GIB), Some("--seed-memory-max 4GiB")),
            (
                flag,
                Some(3_000_000_000),
                Some("2.8GiB (an outer limit, lower than --seed-memory-max 4GiB)"),
            ),
            (
                Some((256 << 20, "256MiB")),
                Some(GIB),
                Some("--seed-memory-max 256MiB"),
            ),
            (None, Some(3 * GIB), Some("3GiB (an outer limit)")),
            (None, None, None),
        ];
        for (flag, inherited, text) in cases {
            assert_eq!(
                describe(flag, inherited).as_deref(),
                text,
                "{flag:?} under {inherited:?}"
            );
        }
        for (flag_bytes, inherited, in_force) in [
            (4 * GIB, None, 4 * GIB),
            (4 * GIB, Some(8 * GIB), 4 * GIB),
            (4 * GIB, Some(3_000_000_000), 3_000_000_000),
            (256 << 20, Some(256 << 20), 256 << 20),
        ] {
            assert_eq!(in_force_bytes(flag_bytes, inherited), in_force);
        }
    }

    #[test]
    fn sizes_read_in_their_largest_unit() {
        for (bytes, text) in [
            (0, "0B"),
            (1023, "1023B"),
            (1024, "1KiB"),
            (1536, "1.5KiB"),
            (256 << 20, "256MiB"),
            (1_500_000_000, "1.4GiB"),
            (3_000_000_000, "2.8GiB"),
            (4 << 30, "4GiB"),
            (1 << 50, "1PiB"),
            (u64::MAX, "16384.0PiB"),
        ] {
            assert_eq!(size_text(bytes), text, "{bytes}");
        }
    }
}
