//! Strings matching a JSON Schema `pattern`, for the subset of ECMA-262 regular
//! expressions tool schemas use in practice (ids such as `^ORD-[0-9]{4}$`, codes, phone
//! numbers, slugs).
//!
//! Supported: literals; `.`; escapes `\d \w \s \D \W \S`, `\t \n \r` and an escaped
//! punctuation character (`\.`, `\-`, `\/`, ...); classes `[a-z0-9_-]` with ranges,
//! escapes and negation (`[^...]`, drawn from printable ASCII); groups `(...)` and
//! `(?:...)` with alternation `|`; quantifiers `?`, `*`, `+`, `{n}`, `{n,}`, `{n,m}` (a
//! lazy `?` after one is accepted; open ends repeat at most [`PATTERN_REPEAT_MAX`]
//! times); `^` at the start and `$` at the end. Anything else (lookaround, backreferences,
//! `\b`, `\p{..}`, anchors elsewhere) is [`Unsupported`]: the caller refuses the schema
//! rather than send a string it cannot vouch for.
//!
//! A JSON Schema pattern is a search, not a full match, so a string matching the whole
//! pattern matches it anchored or not. Generation draws only integers from the caller's
//! stream (no floats), so it is the same on every platform.

use crate::rng::DeterministicRng;

/// Longest pattern read, in characters.
pub const PATTERN_CHARS_MAX: usize = 256;

/// Most repetitions an open-ended quantifier (`*`, `+`, `{n,}`) adds past its minimum.
pub const PATTERN_REPEAT_MAX: u32 = 6;

/// Largest `{n}` or `{n,m}` bound accepted.
const PATTERN_BOUND_MAX: u32 = 64;

/// Nesting depth of groups read at most.
const PATTERN_DEPTH_MAX: usize = 8;

/// Characters one generated string gets at most.
pub(crate) const PATTERN_OUTPUT_CHARS_MAX: usize = 512;

/// A pattern outside the supported subset, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pattern {pattern:?} is outside the supported subset: {reason}")]
pub struct Unsupported {
    /// The pattern.
    pub pattern: String,
    /// What is not supported.
    pub reason: String,
}

#[derive(Debug, Clone)]
enum Node {
    Literal(char),
    /// Inclusive ranges; negated classes draw from printable ASCII outside them.
    Class(Vec<(char, char)>, bool),
    /// Alternatives, each a sequence.
    Group(Vec<Vec<Node>>),
    Repeat(Box<Node>, u32, u32),
}

const DIGITS: &[(char, char)] = &[('0', '9')];
const WORD: &[(char, char)] = &[('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')];
const SPACE: &[(char, char)] = &[(' ', ' '), ('\t', '\t'), ('\n', '\n')];

/// A string matching `pattern`, or why the pattern is not supported.
pub fn generate(pattern: &str, rng: &mut DeterministicRng) -> Result<String, Unsupported> {
    let nodes = parse(pattern)?;
    let mut out = String::new();
    for node in &nodes {
        emit(node, rng, &mut out);
    }
    Ok(out)
}

/// Whether `pattern` is inside the supported subset.
pub fn supported(pattern: &str) -> Result<(), Unsupported> {
    parse(pattern).map(|_| ())
}

fn parse(pattern: &str) -> Result<Vec<Node>, Unsupported> {
    let fail = |reason: &str| Unsupported {
        pattern: pattern.to_owned(),
        reason: reason.to_owned(),
    };
    let chars: Vec<char> = pattern.chars().collect();
    if chars.len() > PATTERN_CHARS_MAX {
        return Err(fail(&format!("longer than {PATTERN_CHARS_MAX} characters")));
    }
    let start = usize::from(chars.first() == Some(&'^'));
    let end_anchored =
        chars.len() > start && chars.last() == Some(&'$') && dollar_is_unescaped(&chars);
    let end = if end_anchored {
        chars.len() - 1
    } else {
        chars.len()
    };
    let mut parser = Parser {
        chars: &chars[start..end],
        at: 0,
    };
    let alternatives = parser.alternatives(0).map_err(|reason| fail(&reason))?;
    if parser.at != parser.chars.len() {
        return Err(fail("an unmatched `)`"));
    }
    Ok(vec![Node::Group(alternatives)])
}

/// Whether the final `$` is an anchor: not escaped by an odd run of `\` before it
/// (`\\$` is a literal backslash, then the anchor).
fn dollar_is_unescaped(chars: &[char]) -> bool {
    let backslashes = chars[..chars.len() - 1]
        .iter()
        .rev()
        .take_while(|&&c| c == '\\')
        .count();
    backslashes % 2 == 0
}

struct Parser<'a> {
    chars: &'a [char],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        self.at += usize::from(c.is_some());
        c
    }

    fn alternatives(&mut self, depth: usize) -> Result<Vec<Vec<Node>>, String> {
        if depth > PATTERN_DEPTH_MAX {
            return Err(format!("groups nested deeper than {PATTERN_DEPTH_MAX}"));
        }
        let mut alternatives = vec![Vec::new()];
        while let Some(c) = self.peek() {
            match c {
                ')' => break,
                '|' => {
                    self.at += 1;
                    alternatives.push(Vec::new());
                }
                _ => {
                    let atom = self.atom(depth)?;
                    let node = self.quantified(atom)?;
                    alternatives
                        .last_mut()
                        .expect("there is always one alternative")
                        .push(node);
                }
            }
        }
        Ok(alternatives)
    }

    fn atom(&mut self, depth: usize) -> Result<Node, String> {
        let c = self.next().ok_or("an unexpected end")?;
        Ok(match c {
            '(' => {
                if self.peek() == Some('?') {
                    self.at += 1;
                    if self.next() != Some(':') {
                        return Err("lookaround and named groups".into());
                    }
                }
                let inner = self.alternatives(depth + 1)?;
                if self.next() != Some(')') {
                    return Err("an unclosed `(`".into());
                }
                Node::Group(inner)
            }
            '[' => self.class()?,
            '.' => Node::Class(vec![(' ', '~')], false),
            '\\' => self.escape()?,
            '^' | '$' => return Err("an anchor inside the pattern".into()),
            '*' | '+' | '?' | '{' => {
                return Err(format!("a quantifier `{c}` with nothing to repeat"));
            }
            other => Node::Literal(other),
        })
    }

    fn escape(&mut self) -> Result<Node, String> {
        let c = self.next().ok_or("a pattern ending in `\\`")?;
        Ok(match c {
            'd' => Node::Class(DIGITS.to_vec(), false),
            'D' => Node::Class(DIGITS.to_vec(), true),
            'w' => Node::Class(WORD.to_vec(), false),
            'W' => Node::Class(WORD.to_vec(), true),
            's' => Node::Class(SPACE.to_vec(), false),
            'S' => Node::Class(SPACE.to_vec(), true),
            't' => Node::Literal('\t'),
            'n' => Node::Literal('\n'),
            'r' => Node::Literal('\r'),
            c if c.is_ascii_punctuation() => Node::Literal(c),
            other => return Err(format!("the escape `\\{other}`")),
        })
    }

    fn class(&mut self) -> Result<Node, String> {
        let negated = self.peek() == Some('^');
        self.at += usize::from(negated);
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let c = self.next().ok_or("an unclosed `[`")?;
            if c == ']' && !first {
                break;
            }
            first = false;
            let low = match c {
                '\\' => match self.escape()? {
                    Node::Literal(l) => l,
                    Node::Class(set, false) => {
                        ranges.extend(set);
                        continue;
                    }
                    Node::Class(..) | Node::Group(_) | Node::Repeat(..) => {
                        return Err("a negated escape inside a class".into());
                    }
                },
                other => other,
            };
            if self.peek() == Some('-') && self.chars.get(self.at + 1).is_some_and(|&n| n != ']') {
                self.at += 1;
                let high = match self.next() {
                    Some('\\') => match self.escape()? {
                        Node::Literal(h) => h,
                        Node::Class(..) | Node::Group(_) | Node::Repeat(..) => {
                            return Err("a class escape as a range's end".into());
                        }
                    },
                    Some(h) => h,
                    None => return Err("an unclosed `[`".into()),
                };
                if high < low {
                    return Err(format!("the range {low}-{high} runs backwards"));
                }
                ranges.push((low, high));
            } else {
                ranges.push((low, low));
            }
        }
        if ranges.is_empty() {
            return Err("an empty class".into());
        }
        Ok(Node::Class(ranges, negated))
    }

    fn quantified(&mut self, atom: Node) -> Result<Node, String> {
        let (min, max) = match self.peek() {
            Some('?') => (0, 1),
            Some('*') => (0, PATTERN_REPEAT_MAX),
            Some('+') => (1, 1 + PATTERN_REPEAT_MAX),
            Some('{') => match self.bounds()? {
                Some((min, max)) => {
                    self.at -= 1; // bounds() consumed the `{..}`; the `}` is skipped below
                    (min, max)
                }
                None => return Err("a `{` that starts no quantifier".into()),
            },
            _ => return Ok(atom),
        };
        self.at += 1;
        if self.peek() == Some('?') {
            self.at += 1; // lazy: the same strings match
        }
        if matches!(self.peek(), Some('?' | '*' | '+' | '{')) {
            return Err("a quantifier after a quantifier".into());
        }
        Ok(Node::Repeat(Box::new(atom), min, max))
    }

    /// `{n}`, `{n,}`, `{n,m}` at the cursor (consumed), or `None` (a literal `{`).
    fn bounds(&mut self) -> Result<Option<(u32, u32)>, String> {
        let rest: String = self.chars[self.at..].iter().collect();
        let Some(close) = rest.find('}') else {
            return Ok(None);
        };
        let inner = &rest[1..close];
        let number = |text: &str| -> Result<u32, String> {
            let n: u32 = text
                .parse()
                .map_err(|_| format!("the quantifier {{{inner}}}"))?;
            if n > PATTERN_BOUND_MAX {
                return Err(format!("a bound over {PATTERN_BOUND_MAX}"));
            }
            Ok(n)
        };
        let bounds = match inner.split_once(',') {
            None => {
                let n = number(inner)?;
                (n, n)
            }
            Some((low, "")) => {
                let n = number(low)?;
                (n, n + PATTERN_REPEAT_MAX)
            }
            Some((low, high)) => (number(low)?, number(high)?),
        };
        if bounds.0 > bounds.1 {
            return Err(format!("the quantifier {{{inner}}} runs backwards"));
        }
        self.at += rest[..=close].chars().count();
        Ok(Some(bounds))
    }
}

fn emit(node: &Node, rng: &mut DeterministicRng, out: &mut String) {
    if out.chars().count() >= PATTERN_OUTPUT_CHARS_MAX {
        return;
    }
    match node {
        Node::Literal(c) => out.push(*c),
        Node::Class(ranges, false) => out.push(pick(ranges, rng)),
        Node::Class(ranges, true) => {
            let allowed: Vec<char> = (' '..='~')
                .filter(|c| !ranges.iter().any(|&(low, high)| (low..=high).contains(c)))
                .collect();
            out.push(*rng.choose(&allowed).unwrap_or(&'~'));
        }
        Node::Group(alternatives) => {
            if let Some(sequence) = rng.choose(alternatives) {
                for node in sequence {
                    emit(node, rng, out);
                }
            }
        }
        Node::Repeat(inner, min, max) => {
            let times = rng.range_inclusive(u64::from(*min), u64::from(*max));
            for _ in 0..times {
                emit(inner, rng, out);
            }
        }
    }
}

/// A character from `ranges`, each range weighted by its size.
fn pick(ranges: &[(char, char)], rng: &mut DeterministicRng) -> char {
    let size = |&(low, high): &(char, char)| u64::from(high) - u64::from(low) + 1;
    let total: u64 = ranges.iter().map(size).sum();
    let mut k = rng.range_inclusive(0, total.saturating_sub(1));
    for range in ranges {
        if k < size(range) {
            return char::from_u32(u32::from(range.0) + k as u32).unwrap_or(range.0);
        }
        k -= size(range);
    }
    ranges.first().map_or('x', |r| r.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_patterns_generate_matching_strings() {
        let patterns = [
            "^ORD-[0-9]{4}$",
            "^[A-Z]{2,3}-\\d+$",
            "^[a-z0-9]+(?:-[a-z0-9]+)*$",
            "^\\+?[1-9]\\d{7,14}$",
            "^(cat|dog|bird)s?$",
            "[^@\\s]+@[^@\\s]+\\.[a-z]{2,}",
            "^\\w{3}\\.\\w{2}$",
            "^a{2,}b?$",
            "^\\$",
        ];
        for pattern in patterns {
            let schema = serde_json::json!({"type": "string", "pattern": pattern});
            let validator = jsonschema::validator_for(&schema).expect("a valid schema");
            for seed in 0..100 {
                let text = generate(pattern, &mut DeterministicRng::new(seed)).unwrap();
                assert!(
                    validator.is_valid(&serde_json::Value::String(text.clone())),
                    "{pattern}: {text:?}"
                );
            }
        }
    }

    #[test]
    fn patterns_outside_the_subset_are_named() {
        for pattern in [
            "^(?=a)b$", "(a)\\1", "\\bword", "a^b", "\\p{L}", "[z-a]", "a**", "x{",
        ] {
            let error = supported(pattern).unwrap_err();
            assert_eq!(error.pattern, pattern);
            assert!(!error.reason.is_empty());
        }
    }
}
