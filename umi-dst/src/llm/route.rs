//! Routes: which generator answers a request.
//!
//! A route is a matcher and a generator. SimLLM tries the user's routes first, in the
//! order they were added, then its built-ins:
//!
//! 1. `tool_calls`: the request offers tools and the last message is not a tool result;
//! 2. `extract_entities`, `rewrite_query`, `detect_evolution`: the request's task tag is
//!    umi-core's (`memory.extract_entities`, ...), or, without a tag, the prompt text
//!    contains the original design's keyword pair ("extract" and "entit", "rewrite" and
//!    "query", "detect" and "evolution");
//! 3. `generic`: everything else (and answers after tool results).
//!
//! The chosen route's name goes into the trace with every call.

use std::fmt;

use umi_core::llm::{CompletionRequest, Message, ToolCall, ToolChoice};
use umi_core::memory::tasks::{TASK_DETECT_EVOLUTION, TASK_EXTRACT_ENTITIES, TASK_REWRITE_QUERY};

use crate::rng::DeterministicRng;

/// What a generator produced for one call, before limits, faults and streaming.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Generated {
    /// The answer's text.
    pub text: String,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Reasoning text, if the route thinks aloud.
    pub reasoning: Option<String>,
    /// Whether the text is JSON whose shape a parser checks (invalid-response faults
    /// then break it structurally rather than just emptying it).
    pub structured: bool,
}

impl Generated {
    /// A plain-text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// A JSON answer whose shape matters.
    pub fn json(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            structured: true,
            ..Self::default()
        }
    }

    /// Total bytes of text, reasoning and tool arguments.
    pub fn bytes(&self) -> usize {
        self.text.len()
            + self.reasoning.as_ref().map_or(0, String::len)
            + self
                .tool_calls
                .iter()
                .map(|c| c.name.len() + umi_core::canonical_json::to_string(&c.arguments).len())
                .sum::<usize>()
    }
}

/// A matcher and a generator. Implement it to teach SimLLM your own prompts.
pub trait Route: Send + Sync {
    /// The route's name, for the trace and for errors.
    fn name(&self) -> &str;

    /// Whether this route answers `request`.
    fn matches(&self, request: &CompletionRequest) -> bool;

    /// The answer, drawn from `rng` (the call's own stream).
    fn generate(&self, request: &CompletionRequest, rng: &mut DeterministicRng) -> Generated;

    /// The task tag this route matches on alone, if it matches on nothing else. Task
    /// tags never cross the wire: over SimNetwork such a route cannot match, and SimLLM
    /// says so in the trace and the log the first time it meets an untagged request.
    fn task_only(&self) -> Option<&str> {
        None
    }
}

type Matcher = dyn Fn(&CompletionRequest) -> bool + Send + Sync;
type Generator = dyn Fn(&CompletionRequest, &mut DeterministicRng) -> Generated + Send + Sync;

/// A route from two closures.
pub struct FnRoute {
    name: String,
    matcher: Box<Matcher>,
    generator: Box<Generator>,
    task_only: Option<&'static str>,
}

impl FnRoute {
    /// A route named `name` answering requests `matcher` accepts with `generator`.
    pub fn new(
        name: impl Into<String>,
        matcher: impl Fn(&CompletionRequest) -> bool + Send + Sync + 'static,
        generator: impl Fn(&CompletionRequest, &mut DeterministicRng) -> Generated
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            matcher: Box::new(matcher),
            generator: Box::new(generator),
            task_only: None,
        }
    }

    /// A route for requests tagged with `task`, in-process only: a request that came
    /// over SimNetwork carries no task tag (real servers never see one), so this route
    /// never matches there. For agents that talk to SimLLM through a client, use
    /// [`FnRoute::for_task_or`].
    pub fn for_task(
        task: &'static str,
        generator: impl Fn(&CompletionRequest, &mut DeterministicRng) -> Generated
        + Send
        + Sync
        + 'static,
    ) -> Self {
        let mut route = Self::new(
            task,
            move |request| request.task.as_deref() == Some(task),
            generator,
        );
        route.task_only = Some(task);
        route
    }

    /// A route for requests tagged with `task` in-process, and for untagged requests
    /// (those that came over SimNetwork) that `matcher` accepts by their content.
    pub fn for_task_or(
        task: &'static str,
        matcher: impl Fn(&CompletionRequest) -> bool + Send + Sync + 'static,
        generator: impl Fn(&CompletionRequest, &mut DeterministicRng) -> Generated
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self::new(
            task,
            move |request| match request.task.as_deref() {
                Some(tag) => tag == task,
                None => matcher(request),
            },
            generator,
        )
    }
}

impl fmt::Debug for FnRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnRoute")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Route for FnRoute {
    fn name(&self) -> &str {
        &self.name
    }
    fn matches(&self, request: &CompletionRequest) -> bool {
        (self.matcher)(request)
    }
    fn generate(&self, request: &CompletionRequest, rng: &mut DeterministicRng) -> Generated {
        (self.generator)(request, rng)
    }
    fn task_only(&self) -> Option<&str> {
        self.task_only
    }
}

/// SimLLM's own routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// Calls the offered tools.
    ToolCalls,
    /// Answers umi-core's entity-extraction prompt.
    ExtractEntities,
    /// Answers umi-core's query-rewrite prompt.
    RewriteQuery,
    /// Answers umi-core's evolution-detection prompt.
    DetectEvolution,
    /// Answers with JSON valid under the request's output schema.
    Structured,
    /// Answers anything else in text.
    Generic,
}

impl Builtin {
    /// The route's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::ToolCalls => "tool_calls",
            Self::ExtractEntities => "extract_entities",
            Self::RewriteQuery => "rewrite_query",
            Self::DetectEvolution => "detect_evolution",
            Self::Structured => "structured",
            Self::Generic => "generic",
        }
    }

    /// The built-in route for `request`.
    pub fn for_request(request: &CompletionRequest) -> Self {
        Self::for_request_with(request, None)
    }

    /// [`Self::for_request`], given the routing words of `request`'s long messages (those
    /// of at least `MEMO_INPUT_BYTES_MIN` bytes) when the caller has already read them.
    pub(crate) fn for_request_with(
        request: &CompletionRequest,
        long_words: Option<super::memo::Words>,
    ) -> Self {
        let after_tool_result = matches!(request.messages.last(), Some(Message::Tool { .. }));
        let forced = matches!(
            request.tool_choice,
            Some(ToolChoice::Required | ToolChoice::Tool(_))
        );
        let refused = request.tool_choice == Some(ToolChoice::None);
        if !request.tools.is_empty() && !refused && (!after_tool_result || forced) {
            return Self::ToolCalls;
        }
        if request.output_schema.is_some() {
            return Self::Structured;
        }
        match request.task.as_deref() {
            Some(TASK_EXTRACT_ENTITIES) => return Self::ExtractEntities,
            Some(TASK_REWRITE_QUERY) => return Self::RewriteQuery,
            Some(TASK_DETECT_EVOLUTION) => return Self::DetectEvolution,
            Some(_) => return Self::Generic,
            None => {}
        }
        Self::by_message_words(request, long_words)
    }

    /// [`Self::by_words`] of the prompt text (the messages' texts joined by newlines),
    /// without the joined copy: a long message's words come from the per-thread memo
    /// ([`super::memo::text_facts`]), the short ones are joined by newlines and searched
    /// as before. The same answer, because no word looked for holds a newline, so none is
    /// found across two messages.
    fn by_message_words(
        request: &CompletionRequest,
        long_words: Option<super::memo::Words>,
    ) -> Self {
        use super::memo::{MEMO_INPUT_BYTES_MIN, ROUTE_WORDS, text_facts};
        let mut long = long_words.unwrap_or_default();
        let mut short = String::new();
        for message in &request.messages {
            let text = message.text();
            if text.len() >= MEMO_INPUT_BYTES_MIN {
                if long_words.is_none() {
                    long = long.union(text_facts(text).words);
                }
            } else {
                if !short.is_empty() {
                    short.push('\n');
                }
                short.push_str(text);
            }
        }
        short.make_ascii_lowercase();
        let has = |index: usize| long.has(index) || short.contains(ROUTE_WORDS[index]);
        let both = |a: usize, b: usize| has(a) && has(b);
        if both(0, 1) {
            Self::ExtractEntities
        } else if both(2, 3) {
            Self::RewriteQuery
        } else if both(4, 5) {
            Self::DetectEvolution
        } else {
            Self::Generic
        }
    }

    /// The built-in an untagged prompt's words ask for (`text` is the whole prompt).
    ///
    /// ASCII lowercasing in place finds exactly what `to_lowercase` would: the words
    /// looked for are ASCII letters, and no other character lowercases to a run of them
    /// (of the two non-ASCII characters whose lowercase holds an ASCII letter, U+212A
    /// KELVIN SIGN gives `k`, in no word, and U+0130 gives `i` followed by U+0307, a mark
    /// no word has after its `i`). It spares a char-by-char copy of the whole prompt on
    /// every untagged call. (SimLLM routes by [`Self::by_message_words`]; this is its
    /// reference.)
    #[cfg(test)]
    fn by_words(mut text: String) -> Self {
        text.make_ascii_lowercase();
        let has = |a: &str, b: &str| text.contains(a) && text.contains(b);
        if has("extract", "entit") {
            Self::ExtractEntities
        } else if has("rewrite", "query") {
            Self::RewriteQuery
        } else if has("detect", "evolution") {
            Self::DetectEvolution
        } else {
            Self::Generic
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use umi_core::memory::tasks::{
        EvolutionSubject, evolution_request, extraction_request, rewrite_request,
    };
    use umi_core::storage::EntityType;

    /// Words in long and short messages, split across two messages, in any case: the
    /// per-message search answers what the search of the joined prompt does.
    #[test]
    fn words_per_message_are_the_words_of_the_joined_prompt() {
        let long = |text: &str| format!("{} {text}", "filler words here. ".repeat(300));
        let cases: [&[String]; 7] = [
            &[long("EXTRACT"), "the entities".into()],
            &["rewrite".into(), long("the QUERY")],
            &[long("detect"), long("Evolution")],
            &["extr".into(), "act entities".into()],
            &[long("rewr"), "ite query".into()],
            &[long("nothing"), "at all".into(), long("")],
            &["detect evolution".into()],
        ];
        for texts in cases {
            let request = CompletionRequest::new(
                texts
                    .iter()
                    .map(|text| Message::user(text.as_str()))
                    .collect(),
            );
            // Three times: a long text is stored the second time it is seen, so the
            // third is answered from the memo.
            for _ in 0..3 {
                assert_eq!(
                    Builtin::by_message_words(&request, None),
                    Builtin::by_words(request.prompt_text()),
                    "{:?}",
                    texts
                        .iter()
                        .map(|t| &t[t.len().saturating_sub(20)..])
                        .collect::<Vec<_>>()
                );
            }
        }
    }

    #[test]
    fn words_are_found_as_unicode_lowercasing_finds_them() {
        let reference = |text: &str| {
            let text = text.to_lowercase();
            let has = |a: &str, b: &str| text.contains(a) && text.contains(b);
            if has("extract", "entit") {
                Builtin::ExtractEntities
            } else if has("rewrite", "query") {
                Builtin::RewriteQuery
            } else if has("detect", "evolution") {
                Builtin::DetectEvolution
            } else {
                Builtin::Generic
            }
        };
        let texts = [
            "EXTRACT the ENTITIES",
            "Extract the entİties",
            "Extract the ENTİTIES and REWRITE the QUERY",
            "rewrite this \u{212A}query",
            "Detect EVOLUTİON, detect Evolution",
            "ÉXTRACT ÉNTITIES",
            "Σ DETECT ΣEVOLUTION",
            "nothing here at all",
            "",
        ];
        for text in texts {
            assert_eq!(
                Builtin::by_words(text.to_owned()),
                reference(text),
                "{text}"
            );
        }
    }

    #[test]
    fn umi_core_prompts_route_by_tag_and_by_keywords() {
        let subject = EvolutionSubject {
            name: "A".into(),
            entity_type: EntityType::Topic,
            content: "x".into(),
        };
        let cases = [
            (
                extraction_request("Alice met Bob."),
                Builtin::ExtractEntities,
            ),
            (rewrite_request("who is Bob?"), Builtin::RewriteQuery),
            (evolution_request(&subject, &[]), Builtin::DetectEvolution),
        ];
        for (request, expected) in cases {
            assert_eq!(Builtin::for_request(&request), expected);
            let untagged = CompletionRequest {
                task: None,
                ..request
            };
            assert_eq!(
                Builtin::for_request(&untagged),
                expected,
                "keywords alone route it"
            );
        }
        let chat = CompletionRequest::new(vec![Message::user("hello there")]);
        assert_eq!(Builtin::for_request(&chat), Builtin::Generic);
    }

    #[test]
    fn tools_are_called_until_results_come_back() {
        let tool =
            umi_core::llm::ToolDefinition::new("now", "", serde_json::json!({"type": "object"}));
        let asking = CompletionRequest::new(vec![Message::user("time?")]).with_tools(vec![tool]);
        assert_eq!(Builtin::for_request(&asking), Builtin::ToolCalls);
        let mut answered = asking.clone();
        answered
            .messages
            .push(Message::tool_result("c1", "12:00", true));
        assert_eq!(Builtin::for_request(&answered), Builtin::Generic);
    }
}
