//! Stop sequences: where an answer ends when the request names strings to stop at.
//!
//! The rule every model in the workspace follows (the mock, SimLLM, our checks of real
//! providers): cut at the earliest byte position where any stop sequence matches; when
//! two match at the same position, the one listed first in the request wins; empty stop
//! strings are ignored; the stop sequence itself is not part of the answer, and the
//! finish reason becomes `stop`.

/// Where a stop sequence matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopMatch {
    /// Byte offset of the match in the text (always a char boundary).
    pub position: usize,
    /// Which stop sequence matched (index into the request's list).
    pub stop_index: usize,
}

/// The earliest match of any non-empty stop sequence in `text`.
pub fn find_stop(text: &str, stops: &[String]) -> Option<StopMatch> {
    let mut best: Option<StopMatch> = None;
    for (stop_index, stop) in stops.iter().enumerate() {
        if stop.is_empty() {
            continue;
        }
        if let Some(position) = text.find(stop.as_str()) {
            // Strictly earlier only: on a tie the earlier-listed stop keeps its place.
            if best.is_none_or(|b| position < b.position) {
                best = Some(StopMatch {
                    position,
                    stop_index,
                });
            }
        }
    }
    debug_assert!(best.is_none_or(|b| text.is_char_boundary(b.position)));
    best
}

/// `text` cut before its first stop sequence, and whether a stop matched.
pub fn apply_stop<'a>(text: &'a str, stops: &[String]) -> (&'a str, bool) {
    match find_stop(text, stops) {
        Some(found) => (&text[..found.position], true),
        None => (text, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stops(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn earliest_match_wins() {
        assert_eq!(
            apply_stop("one two three", &stops(&["three", "two"])),
            ("one ", true)
        );
        assert_eq!(
            apply_stop("no match", &stops(&["zzz"])),
            ("no match", false)
        );
    }

    #[test]
    fn ties_go_to_the_first_listed() {
        let found = find_stop("abcdef", &stops(&["cd", "c", "cde"])).unwrap();
        assert_eq!(
            found,
            StopMatch {
                position: 2,
                stop_index: 0
            }
        );
        let found = find_stop("abcdef", &stops(&["cde", "cd"])).unwrap();
        assert_eq!(found.stop_index, 0);
    }

    #[test]
    fn empty_stops_are_ignored_and_multibyte_is_safe() {
        assert_eq!(
            apply_stop("héllo wörld", &stops(&["", "ö"])),
            ("héllo w", true)
        );
        assert_eq!(apply_stop("abc", &stops(&[""])), ("abc", false));
    }
}
