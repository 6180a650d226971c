//! Where a request says which seed it runs under and which scope counts its repeats:
//! `/seed/{n}/` and `/scope/{name}/` path segments (in that order, both optional), or the
//! `x-umi-seed` and `x-umi-scope` headers (a header wins over the path). Where a seed
//! goes, a path may (`branch.rs`): `x-umi-seed: 7/3:9913`, or `/seed/7/3:9913/` (each
//! branch its own `STEP:STREAM` segment after the seed's).
//!
//! The seed picks the answers. The scope only counts occurrences: the second identical
//! request in one scope is occurrence 1 (so a retry after a fault meets the next draw),
//! and a fresh scope starts again at 0. A scope never feeds a seed, so a test that runs
//! under a fresh scope per run (what the pytest plugin and the TypeScript helper do) gets
//! the same answers on a fresh server and on one that already served it: a rerun is a
//! rerun. Both are checked here, with a refusal naming the header or path segment.

use crate::path::RunPath;
use crate::seed_text::parse_seed;

/// The longest scope name, in bytes.
pub(crate) const SCOPE_BYTES_MAX: usize = 128;

/// What a request's path and headers say about its seed and scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Address {
    /// The seed it names (`None`: the session's).
    pub(crate) seed: Option<u64>,
    /// The path it names (no branches for a bare seed, or none).
    pub(crate) branches: RunPath,
    /// The scope its occurrences are counted in (`""`: the server-wide one).
    pub(crate) scope: String,
    /// The path with the `/seed/{n}` and `/scope/{name}` segments taken off.
    pub(crate) path: String,
    /// The agent's clock when it sent the request, µs since the simulated epoch, when it
    /// runs on Umi's clock (`x-umi-clock-us`: `super::clock`); set by the caller.
    pub(crate) clock_us: Option<u64>,
}

/// Reads `path` and the `x-umi-seed` / `x-umi-scope` header values (`None` when absent;
/// `Err(())` when present but not text).
pub(crate) fn address(
    path: &str,
    seed_header: Option<Result<&str, ()>>,
    scope_header: Option<Result<&str, ()>>,
) -> Result<Address, String> {
    let mut rest = path.to_owned();
    let mut seed = None;
    let mut branches = RunPath::from_seed(0);
    if let Some((number, tail)) = segment(&rest, "/seed/") {
        seed = Some(parse_seed(&number).map_err(|e| format!("path /seed/{number}: {e}"))?);
        rest = tail;
        let mut text = number;
        while let Some((branch, tail)) = branch_segment(&rest) {
            text = format!("{text}/{branch}");
            rest = tail;
        }
        branches = text
            .parse()
            .map_err(|e| format!("path /seed/{text}: {e}"))?;
    }
    let mut scope = String::new();
    if let Some((name, tail)) = segment(&rest, "/scope/") {
        scope = checked_scope(&name).map_err(|reason| format!("path /scope/{name}: {reason}"))?;
        rest = tail;
    }
    if let Some(text) = seed_header {
        let text = text.map_err(|()| "header x-umi-seed: not text".to_owned())?;
        let path: RunPath = text
            .parse()
            .map_err(|e| format!("header x-umi-seed {text:?}: {e}"))?;
        seed = Some(path.seed);
        branches = path;
    }
    if let Some(text) = scope_header {
        let text = text.map_err(|()| "header x-umi-scope: not text".to_owned())?;
        scope = checked_scope(text)
            .map_err(|reason| format!("header x-umi-scope {text:?}: {reason}"))?;
    }
    Ok(Address {
        seed,
        branches,
        scope,
        path: rest,
        clock_us: None,
    })
}

/// The scope a request to the server's own paths names: `?scope=S` (percent-decoded),
/// else the path's or header's (`address_scope`, `""` for none). `None`: every scope.
pub(crate) fn own_path_scope(
    query: Option<&str>,
    address_scope: &str,
) -> Result<Option<String>, String> {
    let named = query.and_then(|query| {
        form_urlencoded::parse(query.as_bytes())
            .find(|(key, _)| key == "scope")
            .map(|(_, value)| value.into_owned())
    });
    match named {
        Some(name) => checked_scope(&name)
            .map(Some)
            .map_err(|reason| format!("query scope={name:?}: {reason}")),
        None if address_scope.is_empty() => Ok(None),
        None => Ok(Some(address_scope.to_owned())),
    }
}

/// `(segment, the path after it)` when `path` starts with `marker` (`/seed/`).
fn segment(path: &str, marker: &str) -> Option<(String, String)> {
    let rest = path.strip_prefix(marker)?;
    let (value, tail) = rest.split_once('/').unwrap_or((rest, ""));
    Some((value.to_owned(), format!("/{tail}")))
}

/// `(STEP:STREAM, the path after it)` when `path`'s first segment is a branch: it
/// starts with a digit and holds a `:` (no API path's first segment does).
fn branch_segment(path: &str) -> Option<(String, String)> {
    let rest = path.strip_prefix('/')?;
    let (value, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let is_branch = value.starts_with(|c: char| c.is_ascii_digit()) && value.contains(':');
    is_branch.then(|| (value.to_owned(), format!("/{tail}")))
}

/// A scope name: 1 to `SCOPE_BYTES_MAX` bytes of letters, digits, `.`, `_`, `~`, `-`
/// (what a URL path segment carries unencoded).
pub(crate) fn checked_scope(name: &str) -> Result<String, String> {
    if name.is_empty() || name.len() > SCOPE_BYTES_MAX {
        return Err(format!("a scope is 1 to {SCOPE_BYTES_MAX} characters"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._~-".contains(&b))
    {
        return Err("a scope is letters, digits, `.`, `_`, `~` and `-`".to_owned());
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &str, seed: Option<&str>, scope: Option<&str>) -> Result<Address, String> {
        address(path, seed.map(Ok), scope.map(Ok))
    }

    #[test]
    fn seeds_and_scopes_come_from_the_path_or_the_headers() {
        let table = [
            (
                "/v1/chat/completions",
                None,
                None,
                (None, "", "/v1/chat/completions"),
            ),
            ("/seed/7/v1/models", None, None, (Some(7), "", "/v1/models")),
            (
                "/seed/0x10/scope/t-1.a_b~/v1/messages",
                None,
                None,
                (Some(16), "t-1.a_b~", "/v1/messages"),
            ),
            (
                "/scope/run9/api/chat",
                None,
                None,
                (None, "run9", "/api/chat"),
            ),
            // A header wins over the path.
            (
                "/seed/7/scope/a/v1/responses",
                Some("9"),
                Some("b"),
                (Some(9), "b", "/v1/responses"),
            ),
            ("/seed/3", None, None, (Some(3), "", "/")),
        ];
        for (path, seed, scope, (want_seed, want_scope, want_path)) in table {
            let got = read(path, seed, scope).unwrap();
            assert_eq!(
                (got.seed, got.scope.as_str(), got.path.as_str()),
                (want_seed, want_scope, want_path),
                "{path}"
            );
        }
    }

    #[test]
    fn a_path_goes_where_a_seed_goes() {
        let got = read(
            "/seed/7/3:9913/12:55/scope/s/v1/chat/completions",
            None,
            None,
        )
        .unwrap();
        assert_eq!(
            (got.seed, got.branches.to_string(), got.path.as_str()),
            (Some(7), "7/3:9913/12:55".into(), "/v1/chat/completions")
        );
        let got = read("/seed/7/scope/s/v1/models", Some("8/2:1"), None).unwrap();
        assert_eq!(
            (got.seed, got.branches.to_string()),
            (Some(8), "8/2:1".into())
        );
        // A bare seed has no branches; a first API segment is never a branch.
        let got = read("/seed/7/v1beta/models/m:generateContent", None, None).unwrap();
        assert_eq!(
            (got.branches.branches.len(), got.path.as_str()),
            (0, "/v1beta/models/m:generateContent")
        );
        let table = [
            (
                read("/seed/7/3:x/v1", None, None),
                ["/seed/7/3:x", "stream `x` is not a number"],
            ),
            (
                read("/seed/7/3:1/2:1/v1", None, None),
                [
                    "/seed/7/3:1/2:1",
                    "step 2 is not after the previous branch's step 3",
                ],
            ),
            (read("/v1", Some("7/0:1"), None), ["x-umi-seed", "step 0"]),
        ];
        // The path parser's own words (`RunPath`'s `PathError`), behind the place it
        // was read from.
        for (result, says) in table {
            let error = result.unwrap_err();
            for part in says {
                assert!(error.contains(part), "{error} should name {part}");
            }
        }
    }

    #[test]
    fn the_own_paths_take_their_scope_from_the_query_then_the_address() {
        assert_eq!(
            own_path_scope(Some("scope=run-1"), ""),
            Ok(Some("run-1".into()))
        );
        assert_eq!(
            own_path_scope(Some("x=1&scope=a%2Db"), "p"),
            Ok(Some("a-b".into()))
        );
        assert_eq!(
            own_path_scope(None, "from-path"),
            Ok(Some("from-path".into()))
        );
        assert_eq!(own_path_scope(Some("other=1"), ""), Ok(None));
        let refused = own_path_scope(Some("scope=a%20b"), "").unwrap_err();
        assert!(
            refused.starts_with("query scope=\"a b\": a scope is letters"),
            "{refused}"
        );
        assert!(own_path_scope(Some("scope="), "").is_err());
    }

    #[test]
    fn a_bad_seed_or_scope_names_where_it_came_from() {
        let long = "x".repeat(SCOPE_BYTES_MAX + 1);
        let table = [
            (read("/seed/ten/v1/models", None, None), "path /seed/ten"),
            (
                read("/v1/models", Some("-1"), None),
                "header x-umi-seed \"-1\"",
            ),
            (
                read("/scope//v1/models", None, None),
                "path /scope/: a scope is 1 to 128",
            ),
            (
                read("/scope/a%20b/v1", None, None),
                "path /scope/a%20b: a scope is letters",
            ),
            (read("/v1", None, Some(&long)), "header x-umi-scope"),
            (
                address("/v1", Some(Err(())), None),
                "header x-umi-seed: not text",
            ),
        ];
        for (result, says) in table {
            let error = result.unwrap_err();
            assert!(error.starts_with(says), "{error} should start with {says}");
        }
    }
}
