//! Failures grouped by what they say, so a sweep with thousands of failing seeds reads as
//! a few lines: each group is a class and a message with its numbers normalised, with a
//! count and the smallest few seeds.
//!
//! The key is the message's first line with every run of decimal digits replaced by `N`
//! ("seed 12 lost note 3" and "seed 13 lost note 4" are one group), cut to
//! `GROUP_KEY_CHARS_MAX` characters. Hex hashes and ids keep their letters, so messages
//! that differ only by a hash may form several groups; `FAILURE_GROUPS_MAX` bounds them
//! and the rest are counted as ungrouped. The seeds kept are the smallest, so a group is
//! the same whatever order the workers finished in, the groups are listed by their smallest
//! seed, and shard reports merge into the unsharded sweep's groups (while no scenario
//! passes the group limit: past it, which groups are kept depends on the order failures
//! arrive in).

use serde::{Deserialize, Serialize};

/// Groups kept per scenario; failures past them count in `failures_ungrouped`.
pub const FAILURE_GROUPS_MAX: usize = 32;

/// Seeds kept per group (the smallest).
pub const FAILURE_GROUP_SEEDS_MAX: usize = 5;

/// Characters of a group's key.
const GROUP_KEY_CHARS_MAX: usize = 160;

/// Failures that say the same thing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureGroup {
    /// `correctness`, `crash`, `liveness` or `nondeterminism`.
    pub class: String,
    /// The first line with digits normalised (`seed N is a multiple of N`).
    pub key: String,
    /// The first line of the smallest seed's message.
    pub example: String,
    /// The command that replays the smallest seed.
    pub replay: String,
    /// Failures in the group.
    pub count: u64,
    /// The smallest seeds, ascending (at most `FAILURE_GROUP_SEEDS_MAX`).
    pub seeds: Vec<u64>,
}

/// The group key of a failure message.
pub fn group_key(message: &str) -> String {
    let mut key = String::new();
    let mut in_digits = false;
    for c in message.lines().next().unwrap_or("").chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                key.push('N');
            }
            in_digits = true;
        } else {
            key.push(c);
            in_digits = false;
        }
        if key.chars().count() >= GROUP_KEY_CHARS_MAX {
            break;
        }
    }
    key
}

/// Adds a group's worth of failures (`other`) to `groups`; `false` when the group is new
/// and the limit is reached (the caller counts it as ungrouped).
pub fn add_group(groups: &mut Vec<FailureGroup>, other: &FailureGroup) -> bool {
    if let Some(group) = groups
        .iter_mut()
        .find(|g| g.class == other.class && g.key == other.key)
    {
        group.count += other.count;
        if other.seeds.first() < group.seeds.first() || group.seeds.is_empty() {
            group.example.clone_from(&other.example);
            group.replay.clone_from(&other.replay);
        }
        group.seeds.extend(&other.seeds);
        group.seeds.sort_unstable();
        group.seeds.dedup();
        group.seeds.truncate(FAILURE_GROUP_SEEDS_MAX);
        sort_by_first_seed(groups);
        return true;
    }
    if groups.len() >= FAILURE_GROUPS_MAX {
        return false;
    }
    let mut group = other.clone();
    group.seeds.truncate(FAILURE_GROUP_SEEDS_MAX);
    groups.push(group);
    sort_by_first_seed(groups);
    true
}

/// Keeps `groups` in one order whatever order their failures arrived in (workers
/// finishing, shards merged): by smallest seed, then class and key. Without it a merged
/// report listed its groups shard by shard and an unsharded one in arrival order.
fn sort_by_first_seed(groups: &mut [FailureGroup]) {
    groups.sort_by(|a, b| {
        (a.seeds.first(), &a.class, &a.key).cmp(&(b.seeds.first(), &b.class, &b.key))
    });
}

/// One failure as a group of one.
pub fn single(class: &str, message: &str, seed: u64, replay: &str) -> FailureGroup {
    FailureGroup {
        class: class.to_owned(),
        key: group_key(message),
        example: message.lines().next().unwrap_or("").to_owned(),
        replay: replay.to_owned(),
        count: 1,
        seeds: vec![seed],
    }
}

/// The groups largest first (ties by class and key), as the table shows them.
pub fn by_size(groups: &[FailureGroup]) -> Vec<&FailureGroup> {
    let mut sorted: Vec<&FailureGroup> = groups.iter().collect();
    sorted.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.class.cmp(&b.class))
            .then_with(|| a.key.cmp(&b.key))
    });
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_normalise_digit_runs_and_keep_the_first_line() {
        let cases = [
            ("seed 12 is a multiple of 3", "seed N is a multiple of N"),
            (
                "seed 13 is a multiple of 13\nmore",
                "seed N is a multiple of N",
            ),
            ("lost note n-0042 after 1.5 s", "lost note n-N after N.N s"),
            ("trace abc123 differs", "trace abcN differs"),
            ("", ""),
        ];
        for (message, key) in cases {
            assert_eq!(group_key(message), key, "{message:?}");
        }
        assert_eq!(
            group_key(&"x".repeat(1000)).chars().count(),
            GROUP_KEY_CHARS_MAX
        );
    }

    #[test]
    fn groups_count_keep_the_smallest_seeds_and_stop_at_the_limit() {
        let mut groups = Vec::new();
        for seed in [40u64, 7, 30, 9, 8, 6, 50] {
            let message = format!("seed {seed} lost");
            assert!(add_group(
                &mut groups,
                &single("correctness", &message, seed, &format!("replay {seed}"))
            ));
        }
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].count, 7);
        assert_eq!(groups[0].seeds, [6, 7, 8, 9, 30]);
        assert_eq!(groups[0].example, "seed 6 lost");
        assert_eq!(groups[0].replay, "replay 6");
        assert!(add_group(
            &mut groups,
            &single("crash", "seed 6 lost", 6, "r")
        ));
        assert_eq!(groups.len(), 2, "another class is another group");
        for n in 0..FAILURE_GROUPS_MAX {
            let letters = [b'a' + (n / 26) as u8, b'a' + (n % 26) as u8];
            let message = format!("kind {}", String::from_utf8_lossy(&letters));
            add_group(&mut groups, &single("crash", &message, 1, "r"));
        }
        assert_eq!(groups.len(), FAILURE_GROUPS_MAX);
        assert!(!add_group(
            &mut groups,
            &single("crash", "brand new", 1, "r")
        ));
        assert_eq!(by_size(&groups)[0].count, 7);
    }

    /// Shards merged in any order, or workers finishing in any order, list the same
    /// groups in the same order (once, a merged report listed them shard by shard).
    #[test]
    fn groups_are_listed_by_smallest_seed_whatever_the_arrival_order() {
        let failures = [
            (30u64, "lost note ab"),
            (4, "lost note cd"),
            (12, "lost note ab"),
            (9, "lost note ef"),
            (2, "lost note ef"),
        ];
        let add_all = |order: &mut dyn Iterator<Item = &(u64, &str)>| {
            let mut groups = Vec::new();
            for (seed, message) in order {
                assert!(add_group(
                    &mut groups,
                    &single("correctness", message, *seed, "r")
                ));
            }
            groups
        };
        let forward = add_all(&mut failures.iter());
        let backward = add_all(&mut failures.iter().rev());
        assert_eq!(forward, backward);
        let firsts: Vec<u64> = forward.iter().map(|g| g.seeds[0]).collect();
        assert_eq!(firsts, [2, 4, 12]);
    }
}
