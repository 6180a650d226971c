//! The optional rate-limit model: a sliding minute of simulated time.
//!
//! A request is admitted if, within the last minute, fewer than `requests_per_minute`
//! requests and at most `tokens_per_minute - prompt_tokens` prompt tokens were admitted.
//! Otherwise it is refused with the *real* remaining wait: the time until enough old
//! requests leave the window. Code that honours Retry-After then gets through on its next
//! try; code that retries sooner is refused again, which is what the router's checkers
//! look for.

use std::collections::VecDeque;
use std::time::Duration;

use super::config::RateLimitModel;

const WINDOW: Duration = Duration::from_secs(60);

/// The admitted requests of the last minute.
#[derive(Debug)]
pub(crate) struct RateWindow {
    model: RateLimitModel,
    admitted: VecDeque<(Duration, u64)>,
}

impl RateWindow {
    pub(crate) fn new(model: RateLimitModel) -> Self {
        Self {
            model,
            admitted: VecDeque::new(),
        }
    }

    /// Admits a request of `tokens` prompt tokens at `now`, or returns how long to wait.
    pub(crate) fn admit(&mut self, now: Duration, tokens: u64) -> Result<(), Duration> {
        self.check(now);
        let decision = self.decide(now, tokens);
        self.check(now);
        // What a refused caller is told to wait: never nothing, never past the window.
        assert!(
            decision.is_ok_and(|()| self.admitted.back() == Some(&(now, tokens)))
                || decision.is_err_and(|wait| wait > Duration::ZERO && wait <= WINDOW),
            "rate window: {decision:?} for {tokens} tokens at {now:?}"
        );
        decision
    }

    /// The window's invariant, before and after each admission: time does not run
    /// backwards (the oldest request is first, none is later than `now`), and what is
    /// inside never exceeds the model's requests and tokens per minute.
    fn check(&self, now: Duration) {
        let tokens_max = u64::from(self.model.tokens_per_minute);
        let requests_max = self.model.requests_per_minute as usize;
        let used: u64 = self.admitted.iter().map(|(_, t)| t).sum();
        assert!(
            self.admitted.len() <= requests_max && used <= tokens_max,
            "rate window over its limits: {} requests, {used} tokens (model {:?})",
            self.admitted.len(),
            self.model
        );
        assert!(
            self.admitted
                .iter()
                .zip(self.admitted.iter().skip(1))
                .all(|((earlier, _), (later, _))| earlier <= later)
                && self.admitted.back().is_none_or(|(at, _)| *at <= now),
            "rate window out of time order at {now:?}: {:?}",
            self.admitted
        );
    }

    /// Drops what left the window and admits or refuses.
    fn decide(&mut self, now: Duration, tokens: u64) -> Result<(), Duration> {
        while self
            .admitted
            .front()
            .is_some_and(|(at, _)| *at + WINDOW <= now)
        {
            self.admitted.pop_front();
        }
        let tokens_max = u64::from(self.model.tokens_per_minute);
        let requests_max = self.model.requests_per_minute as usize;
        if tokens > tokens_max {
            // Never admissible; a real provider answers 429 with a full window's wait.
            return Err(WINDOW);
        }
        let mut requests = self.admitted.len();
        let mut used: u64 = self.admitted.iter().map(|(_, t)| t).sum();
        if requests < requests_max && used + tokens <= tokens_max {
            self.admitted.push_back((now, tokens));
            return Ok(());
        }
        // Walk the window oldest first until enough would have left.
        for (at, old_tokens) in &self.admitted {
            requests -= 1;
            used -= old_tokens;
            if requests < requests_max && used + tokens <= tokens_max {
                return Err(*at + WINDOW - now);
            }
        }
        Err(WINDOW)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_with_the_real_remaining_wait() {
        let mut window = RateWindow::new(RateLimitModel {
            requests_per_minute: 2,
            tokens_per_minute: 1_000,
        });
        let s = Duration::from_secs;
        assert_eq!(window.admit(s(0), 10), Ok(()));
        assert_eq!(window.admit(s(10), 10), Ok(()));
        assert_eq!(
            window.admit(s(20), 10),
            Err(s(40)),
            "the first request leaves at 60 s"
        );
        assert_eq!(window.admit(s(60), 10), Ok(()));
        assert_eq!(
            window.admit(s(61), 985),
            Err(s(9)),
            "wait for the 10 s request to leave"
        );
        assert_eq!(
            window.admit(s(61), 995),
            Err(s(59)),
            "995 tokens need both to leave"
        );
        assert_eq!(window.admit(s(61), 5_000), Err(WINDOW));
    }

    fn window_of_two() -> RateWindow {
        RateWindow::new(RateLimitModel {
            requests_per_minute: 2,
            tokens_per_minute: 1_000,
        })
    }

    /// A planted window holding more requests than the model admits trips the
    /// invariant checked before each admission.
    #[test]
    #[should_panic(expected = "rate window over its limits")]
    fn a_window_over_its_limits_trips_the_invariant() {
        let mut window = window_of_two();
        let s = Duration::from_secs;
        window.admitted.extend([(s(1), 1), (s(2), 1), (s(3), 1)]);
        let _ = window.admit(s(4), 1);
    }

    /// Time running backwards (a request admitted at 10 s, then one asked at 5 s) trips
    /// it too: the window's oldest-first order is what its refusals are computed from.
    #[test]
    #[should_panic(expected = "rate window out of time order")]
    fn time_running_backwards_trips_the_invariant() {
        let mut window = window_of_two();
        let s = Duration::from_secs;
        assert_eq!(window.admit(s(10), 1), Ok(()));
        let _ = window.admit(s(5), 1);
    }
}
