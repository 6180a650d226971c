//! A paced stream: items released one after another, each after its own delay of
//! simulated time, all waiting on one timer.
//!
//! SimLLM's streamed answer is such a stream: a delay before each event. Waiting on a
//! fresh boxed `tokio::time::sleep` per event cost an allocation, a timer entry built
//! and torn down, and a combinator's future per event. [`Paced`] keeps one `Sleep` and
//! moves it with `reset` to each next deadline, and releases an item with no delay
//! without touching the timer at all.
//!
//! What a task observes is exactly what the per-event sleep gave it: the deadline is
//! read from the clock at the same point (when the stream is polled for the next item),
//! the timer is registered with the runtime in that same poll (`reset` registers at once,
//! a fresh `Sleep` on its first poll, which came right after its creation), it is polled
//! as often (once when armed, once when it fired: the same task budget spent), and a
//! zero delay skipped the timer before too. So no seed's interleaving moves; the trace
//! hashes of every scenario say so.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;

use super::SimClock;

/// Items released after their delays, in order; see the module docs.
pub struct Paced<I, T> {
    clock: SimClock,
    items: I,
    /// The item whose delay is running, released when `timer` fires.
    waiting: Option<T>,
    /// The one timer, built for the first delay and reset for each later one.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<I: Iterator<Item = (Duration, T)>, T> Paced<I, T> {
    /// `items`, each released `delay` after the one before it (the first `delay` after
    /// the stream is first polled).
    pub fn new(clock: SimClock, items: impl IntoIterator<IntoIter = I>) -> Self {
        Self {
            clock,
            items: items.into_iter(),
            waiting: None,
            timer: None,
        }
    }

    /// Arms the timer for `delay` from now.
    fn arm(&mut self, delay: Duration) -> Pin<&mut tokio::time::Sleep> {
        let deadline = self.clock.deadline_after(delay);
        match &mut self.timer {
            Some(timer) => timer.as_mut().reset(deadline),
            None => self.timer = Some(Box::pin(self.clock.sleep_until(deadline))),
        }
        self.timer
            .as_mut()
            .map(Pin::as_mut)
            .unwrap_or_else(|| unreachable!("armed just above"))
    }
}

impl<I, T> std::fmt::Debug for Paced<I, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Paced")
            .field("waiting", &self.waiting.is_some())
            .finish_non_exhaustive()
    }
}

// `Paced` never pins its items (they are moved out by value) and its timer is boxed.
impl<I: Unpin, T> Unpin for Paced<I, T> {}

impl<I: Iterator<Item = (Duration, T)> + Unpin, T> Stream for Paced<I, T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        let timer = match this.waiting {
            Some(_) => this
                .timer
                .as_mut()
                .map(Pin::as_mut)
                .unwrap_or_else(|| unreachable!("an item waits only on an armed timer")),
            None => {
                let Some((delay, item)) = this.items.next() else {
                    return Poll::Ready(None);
                };
                if delay.is_zero() {
                    return Poll::Ready(Some(item));
                }
                this.waiting = Some(item);
                this.arm(delay)
            }
        };
        match timer.poll(cx) {
            Poll::Ready(()) => Poll::Ready(this.waiting.take()),
            Poll::Pending => Poll::Pending,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let waiting = usize::from(self.waiting.is_some());
        let (low, high) = self.items.size_hint();
        (
            low.saturating_add(waiting),
            high.and_then(|high| high.checked_add(waiting)),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use futures::StreamExt;

    use super::*;
    use crate::clock::tests::paused_runtime;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn items_arrive_after_their_delays_and_zero_delays_at_once() {
        paused_runtime().block_on(async {
            let clock = SimClock::new(0);
            let delays = [ms(5), ms(0), ms(3), ms(0), ms(0), ms(40), ms(1)];
            let items: Vec<_> = delays.iter().copied().zip(0u32..).collect();
            let mut stream = Paced::new(clock.clone(), items);
            assert_eq!(stream.size_hint(), (7, Some(7)));
            let mut seen = Vec::new();
            while let Some(item) = stream.next().await {
                seen.push((item, clock.now().as_millis()));
            }
            assert_eq!(
                seen,
                [(0, 5), (1, 5), (2, 8), (3, 8), (4, 8), (5, 48), (6, 49)]
            );
            assert_eq!(stream.size_hint(), (0, Some(0)));
        });
    }

    /// The boxed sleep per item that `Paced` replaced (SimLLM's stream before it).
    fn per_item_sleeps(
        clock: &SimClock,
        items: Vec<(Duration, &'static str)>,
    ) -> futures::stream::BoxStream<'static, &'static str> {
        let clock = clock.clone();
        futures::stream::iter(items)
            .then(move |(delay, item)| {
                let sleep = (!delay.is_zero()).then(|| clock.sleep(delay));
                async move {
                    if let Some(sleep) = sleep {
                        sleep.await;
                    }
                    item
                }
            })
            .boxed()
    }

    /// Three streams and a plain sleeper, some deadlines shared: who sees what when.
    fn interleaving(paced: bool) -> Vec<(&'static str, u128)> {
        paused_runtime().block_on(async move {
            let clock = SimClock::new(0);
            let log = Arc::new(Mutex::new(Vec::new()));
            let mut tasks = Vec::new();
            let plans: [(&str, &[u64]); 3] = [
                ("a", &[3, 3, 0, 3, 64, 1]),
                ("b", &[2, 2, 5, 0, 0, 62]),
                ("c", &[0, 6, 3, 4_000, 1]),
            ];
            for (name, delays) in plans {
                let (clock, log) = (clock.clone(), log.clone());
                let items: Vec<_> = delays.iter().map(|&d| (ms(d), name)).collect();
                tasks.push(tokio::spawn(async move {
                    let mut stream = if paced {
                        Paced::new(clock.clone(), items).boxed()
                    } else {
                        per_item_sleeps(&clock, items)
                    };
                    while let Some(name) = stream.next().await {
                        log.lock().unwrap().push((name, clock.now().as_millis()));
                    }
                }));
            }
            let (sleeper_clock, sleeper_log) = (clock.clone(), log.clone());
            tasks.push(tokio::spawn(async move {
                for pause in [6, 3, 65] {
                    sleeper_clock.sleep(ms(pause)).await;
                    let now = sleeper_clock.now().as_millis();
                    sleeper_log.lock().unwrap().push(("s", now));
                }
            }));
            for task in tasks {
                task.await.unwrap();
            }
            let log = Arc::try_unwrap(log).expect("every task is done");
            log.into_inner().unwrap()
        })
    }

    /// Paced streams interleave with each other and with other timers exactly as the
    /// per-item sleeps did, ties at one instant included.
    #[test]
    fn streams_interleave_as_per_item_sleeps_did() {
        let before = interleaving(false);
        assert_eq!(before.len(), 20);
        assert!(
            before
                .windows(2)
                .any(|w| w[0].1 == w[1].1 && w[0].0 != w[1].0),
            "the plan has ties: {before:?}"
        );
        assert_eq!(interleaving(true), before);
    }

    #[test]
    fn a_dropped_stream_leaves_no_timer_behind() {
        paused_runtime().block_on(async {
            let clock = SimClock::new(0);
            let mut stream = Paced::new(clock.clone(), vec![(ms(10), 1), (ms(10_000), 2)]);
            assert_eq!(stream.next().await, Some(1));
            let pending = futures::poll!(stream.next());
            assert!(pending.is_pending(), "the second item waits");
            drop(stream);
            clock.sleep(ms(1)).await;
            assert_eq!(clock.now(), ms(11), "no timer of the dropped stream fired");
        });
    }
}
