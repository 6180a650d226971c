//! The memory limit of a sweep's worker processes (`--seed-memory-max`): a size as
//! people type it (`512MiB`, `4G`, `none`), and applying it to the worker's own process
//! as its address-space limit (`RLIMIT_AS`), so a seed that allocates without bound
//! fails its allocation ("memory allocation of N bytes failed", an abort) and costs one
//! worker, not the machine. A worker only ever lowers the limit it inherits.
//!
//! Unix only: elsewhere the limit cannot be set, and the `dst` command says it ignores
//! the flag. On macOS the kernel does not enforce `RLIMIT_AS`.

/// The default limit per worker process: generous, so only a runaway seed meets it.
pub const SEED_MEMORY_MAX_DEFAULT: &str = "4GiB";

/// The smallest limit accepted: below it the worker's own binary, stacks and runtime
/// leave a seed no room.
pub const SEED_MEMORY_MAX_MIN_BYTES: u64 = 128 << 20;

/// The largest limit accepted (a larger one is not a limit).
pub const SEED_MEMORY_MAX_MAX_BYTES: u64 = 1 << 50;

/// Parses a memory size: a number of bytes with an optional unit (`K`, `M`, `G`, `T`,
/// with or without `iB`/`B`; powers of 1024), or `none` for no limit.
pub fn parse_memory_max(text: &str) -> Result<Option<u64>, String> {
    let trimmed = text.trim();
    if matches!(
        trimmed.to_ascii_lowercase().as_str(),
        "none" | "off" | "unlimited"
    ) {
        return Ok(None);
    }
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a memory size like 512MiB, 4GiB or none"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "unknown memory unit {other:?} in {text:?} (use K, M, G or T, or none)"
            ));
        }
    };
    let bytes = number
        .checked_mul(1u64 << shift)
        .filter(|bytes| *bytes <= SEED_MEMORY_MAX_MAX_BYTES)
        .ok_or_else(|| format!("{text:?} is larger than the largest limit, 1PiB"))?;
    if bytes < SEED_MEMORY_MAX_MIN_BYTES {
        return Err(format!(
            "{text:?} is below the smallest limit, 128MiB (a worker needs room to start)"
        ));
    }
    Ok(Some(bytes))
}

/// Whether this platform can limit a worker's memory.
pub const fn supported() -> bool {
    cfg!(unix)
}

/// Limits this process's address space to `bytes`, never above the limit it already
/// has: an outer limit that is lower stays in force (and is the one a crash names,
/// `limit_in_force.rs`).
pub fn apply(bytes: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use rlimit::Resource;
        let (_, hard) = rlimit::getrlimit(Resource::AS)?;
        let inherited = crate::limit_in_force::inherited_bytes();
        let limit = crate::limit_in_force::in_force_bytes(bytes, inherited);
        rlimit::setrlimit(Resource::AS, limit, hard)
    }
    #[cfg(not(unix))]
    {
        let _ = bytes;
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "a memory limit per worker needs setrlimit (unix)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units_and_bad_ones_say_why() {
        assert_eq!(parse_memory_max("256MiB"), Ok(Some(256 << 20)));
        assert_eq!(parse_memory_max("4G"), Ok(Some(4 << 30)));
        assert_eq!(parse_memory_max(" 1tb "), Ok(Some(1 << 40)));
        assert_eq!(parse_memory_max("134217728"), Ok(Some(128 << 20)));
        assert_eq!(parse_memory_max("none"), Ok(None));
        assert_eq!(parse_memory_max(SEED_MEMORY_MAX_DEFAULT), Ok(Some(4 << 30)));
        for (bad, says) in [
            ("lots", "not a memory size"),
            ("5X", "unknown memory unit"),
            ("64M", "smallest limit"),
            ("0", "smallest limit"),
            ("99999999999T", "largest limit"),
            ("2P", "unknown memory unit"),
        ] {
            let error = parse_memory_max(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
