//! MCP sessions: what a simulated server remembers between a client's requests.
//!
//! A session begins with `initialize`; its id goes back in the `Mcp-Session-Id` header
//! (2025-11-25, transports, session management). The server keeps, per session, the
//! protocol version it agreed, whether the client said `notifications/initialized`, and
//! which of its tools is hidden right now (the tool list changes mid-session under
//! `tool.mcp_tools_changed`). A session the server forgot (`tool.mcp_session_expired`)
//! is gone from the table: its id gets 404 from then on.
//!
//! The table is a value, so `dst serve` can carry it from one request's simulation to
//! the next: [`Sessions`] in, the request answered, [`Sessions`] out.

use std::collections::BTreeMap;

/// Sessions a server keeps at most; past it, the oldest is forgotten (its client gets
/// 404 and initializes again, as the spec lets a server do at any time).
pub const SESSIONS_MAX: usize = 1_024;

/// One session's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSession {
    /// The protocol version the server answered `initialize` with.
    pub protocol_version: String,
    /// Whether the client sent `notifications/initialized` (kept for the trace and for
    /// tests; the server answers requests before it, as the spec's servers may).
    pub initialized: bool,
    /// The tool the server does not list (or run) right now, after its list changed.
    pub hidden_tool: Option<String>,
    /// When it began, as the number of sessions begun before it (the eviction order).
    pub(crate) begun: u64,
}

/// A server's sessions by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sessions {
    by_id: BTreeMap<String, McpSession>,
    begun: u64,
}

impl Sessions {
    /// The session `id`, if the server has it.
    pub fn get(&self, id: &str) -> Option<&McpSession> {
        self.by_id.get(id)
    }

    /// The session `id`, to change.
    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut McpSession> {
        self.by_id.get_mut(id)
    }

    /// Begins a session `id` at `protocol_version`, forgetting the oldest one past
    /// [`SESSIONS_MAX`].
    pub(crate) fn begin(&mut self, id: String, protocol_version: String) {
        self.check();
        let session = McpSession {
            protocol_version,
            initialized: false,
            hidden_tool: None,
            begun: self.begun,
        };
        self.begun += 1;
        self.insert_bounded(id, session);
        self.check();
    }

    /// The table's invariant, before and after each change: bounded, and every session
    /// numbered below the count of sessions begun (so the next one begun is the newest,
    /// and eviction takes the oldest).
    fn check(&self) {
        assert!(
            self.by_id.len() <= SESSIONS_MAX,
            "mcp sessions: {} kept, past {SESSIONS_MAX}",
            self.by_id.len()
        );
        if let Some((id, session)) = self
            .by_id
            .iter()
            .find(|(_, session)| session.begun >= self.begun)
        {
            panic!(
                "mcp sessions: session {id} numbered {} but only {} begun",
                session.begun, self.begun
            );
        }
    }

    /// Keeps `session` as `id`, forgetting the oldest other session past [`SESSIONS_MAX`].
    fn insert_bounded(&mut self, id: String, session: McpSession) {
        if self.by_id.len() >= SESSIONS_MAX && !self.by_id.contains_key(&id) {
            let oldest = self
                .by_id
                .iter()
                .min_by_key(|(_, session)| session.begun)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                self.by_id.remove(&oldest);
            }
        }
        self.by_id.insert(id, session);
        assert!(
            self.by_id.len() <= SESSIONS_MAX,
            "the session table is bounded"
        );
    }

    /// Forgets `id` (it expired, or the client ended it); whether it was there.
    pub(crate) fn end(&mut self, id: &str) -> bool {
        self.check();
        let ended = self.by_id.remove(id).is_some();
        assert!(
            !self.by_id.contains_key(id),
            "mcp sessions: {id} outlived its end"
        );
        ended
    }

    /// How many sessions there are.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The session `id` alone (or nothing), as a table: what one request needs.
    pub fn only(&self, id: Option<&str>) -> Sessions {
        let mut out = Sessions {
            by_id: BTreeMap::new(),
            begun: self.begun,
        };
        if let Some((id, session)) = id.and_then(|id| self.by_id.get_key_value(id)) {
            out.by_id.insert(id.clone(), session.clone());
        }
        out
    }

    /// Writes what `after` (the table one request ended with, begun from
    /// `self.only(id)`) says of the session `id` and of any session it began.
    pub fn merge(&mut self, id: Option<&str>, after: &Sessions) {
        self.check();
        after.check();
        if let Some(id) = id {
            match after.by_id.get(id) {
                // Only a session still here is updated: one ended meanwhile (a DELETE or
                // an eviction merged first) stays ended, and its id keeps getting 404.
                Some(session) => {
                    if let Some(kept) = self.by_id.get_mut(id) {
                        *kept = session.clone();
                    }
                }
                None => {
                    self.by_id.remove(id);
                }
            }
        }
        // `after` began from `only(id)`: every other session in it is one the request began.
        for (new_id, session) in after
            .by_id
            .iter()
            .filter(|(other, _)| Some(other.as_str()) != id)
        {
            let mut session = session.clone();
            // Requests answered side by side each began from the same count: number the
            // new sessions in the order they are merged.
            session.begun = self.begun;
            self.begun += 1;
            self.insert_bounded(new_id.clone(), session);
        }
        self.check();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_session_goes_first_and_merges_keep_what_a_request_changed() {
        let mut sessions = Sessions::default();
        for n in 0..SESSIONS_MAX + 1 {
            sessions.begin(format!("s{n}"), "2025-11-25".into());
        }
        assert_eq!(sessions.len(), SESSIONS_MAX);
        assert!(sessions.get("s0").is_none(), "the oldest was forgotten");
        assert!(sessions.get("s1").is_some());

        let mut served = Sessions::default();
        served.begin("a".into(), "2025-06-18".into());
        served.begin("b".into(), "2025-06-18".into());
        // A request in session a that hid a tool.
        let mut after = served.only(Some("a"));
        after.get_mut("a").unwrap().hidden_tool = Some("pay".into());
        served.merge(Some("a"), &after);
        assert_eq!(served.get("a").unwrap().hidden_tool.as_deref(), Some("pay"));
        // A request that began a new session.
        let mut after = served.only(None);
        after.begin("c".into(), "2025-11-25".into());
        served.merge(None, &after);
        assert!(served.get("c").is_some() && served.get("b").is_some());
        // A request whose session expired.
        let mut after = served.only(Some("b"));
        assert!(after.end("b"));
        served.merge(Some("b"), &after);
        assert!(served.get("b").is_none());
        assert_eq!(served.len(), 2);
        // A request in session a that was in flight while a DELETE ended a: a stays ended
        // (it once came back, and a full table then grew past its limit).
        let in_flight = served.only(Some("a"));
        assert!(served.end("a"));
        served.merge(Some("a"), &in_flight);
        assert!(served.get("a").is_none(), "an ended session came back");
    }

    /// A planted table whose count of sessions begun is behind a session's number (the
    /// next session begun would not be the newest) trips the invariant on its next
    /// change.
    #[test]
    #[should_panic(expected = "numbered 1 but only 1 begun")]
    fn a_session_numbered_past_the_count_trips_the_invariant() {
        let mut sessions = Sessions::default();
        sessions.begin("a".into(), "2025-11-25".into());
        sessions.begin("b".into(), "2025-11-25".into());
        sessions.begun = 1;
        sessions.end("a");
    }

    /// A request's table that came back over the bound trips it in `merge`.
    #[test]
    #[should_panic(expected = "kept, past")]
    fn a_table_past_its_bound_trips_the_invariant() {
        let mut served = Sessions::default();
        let mut after = served.only(None);
        for n in 0..=SESSIONS_MAX {
            after.by_id.insert(
                format!("s{n}"),
                McpSession {
                    protocol_version: "2025-11-25".into(),
                    initialized: false,
                    hidden_tool: None,
                    begun: 0,
                },
            );
        }
        after.begun = 1;
        served.merge(None, &after);
    }
}
