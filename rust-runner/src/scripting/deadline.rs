//! Request timeouts without a timer per request.
//!
//! The driver's own request timeout wraps every request in a tokio `Timeout`: a timer-wheel entry
//! registered and removed per request, and one more copy of the driver's ~3 KB future (about 4% of the
//! client's samples on inserts, README "Client CPU per request"). All requests of a worker have the same
//! timeout and are started in order, so they come due in the order they were started: a queue, swept
//! by the worker's loop, which keeps one timer for the whole queue.
//!
//! While no loop sweeps (the script's `schema`, `prepare` or `erase`), requests use tokio's timeout.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// The pending requests of one worker and when each is due.
pub struct Deadlines {
    timeout: Duration,
    inner: RefCell<Inner>,
}

#[derive(Default)]
struct Inner {
    /// A loop sweeps the queue (`attach`): requests may rely on it instead of a timer.
    swept: bool,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// (due, slot, generation), oldest first. A finished request's entry stays until it reaches the
    /// front; with one request stuck the queue holds what the others started within one timeout.
    queue: VecDeque<(Instant, u32, u32)>,
}

#[derive(Default)]
struct Slot {
    /// Bumped when the slot is freed, so that old queue entries no longer match it.
    generation: u32,
    expired: bool,
    waker: Option<Waker>,
}

/// One request's place in the queue.
#[derive(Clone, Copy, Debug)]
pub struct Ticket {
    slot: u32,
    generation: u32,
}

/// The request got no answer within the timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedOut(pub Duration);

impl Deadlines {
    pub fn new(timeout: Duration) -> Deadlines {
        Deadlines { timeout, inner: RefCell::new(Inner::default()) }
    }

    /// A loop now sweeps (`true`) or no longer does (`false`); when it stops, requests still queued
    /// lose their place (their futures were dropped with the loop's calls, or are polled no more).
    pub fn attach(&self, swept: bool) {
        let mut s = self.inner.borrow_mut();
        s.swept = swept;
        if !swept {
            s.queue.clear();
        }
    }

    /// Runs `fut` with the timeout: queued when a loop sweeps, else under a tokio timer.
    pub async fn bound<F: Future + Unpin>(&self, started: Instant, fut: F) -> Result<F::Output, TimedOut> {
        let ticket = {
            let mut s = self.inner.borrow_mut();
            if s.swept {
                Some(s.start(started + self.timeout))
            } else {
                None
            }
        };
        match ticket {
            Some(t) => Bounded { fut, deadlines: self, ticket: Some(t) }.await,
            None => tokio::time::timeout(self.timeout, fut).await.map_err(|_| TimedOut(self.timeout)),
        }
    }

    /// Marks the requests due by `now` as timed out and wakes them; returns when the next one is due.
    pub fn sweep(&self, now: Instant) -> Option<Instant> {
        let mut s = self.inner.borrow_mut();
        while let Some(&(due, slot, generation)) = s.queue.front() {
            let live = s.slots[slot as usize].generation == generation;
            if live && due > now {
                return Some(due);
            }
            s.queue.pop_front();
            if live {
                let slot = &mut s.slots[slot as usize];
                slot.expired = true;
                if let Some(w) = slot.waker.take() {
                    w.wake();
                }
            }
        }
        None
    }

    #[cfg(test)]
    fn queued(&self) -> usize {
        self.inner.borrow().queue.len()
    }
}

impl Inner {
    fn start(&mut self, due: Instant) -> Ticket {
        let slot = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let generation = self.slots[slot as usize].generation;
        self.queue.push_back((due, slot, generation));
        Ticket { slot, generation }
    }

    fn finish(&mut self, t: Ticket) {
        let slot = &mut self.slots[t.slot as usize];
        if slot.generation == t.generation {
            slot.generation = slot.generation.wrapping_add(1);
            slot.expired = false;
            slot.waker = None;
            self.free.push(t.slot);
        }
    }
}

struct Bounded<'a, F> {
    fut: F,
    deadlines: &'a Deadlines,
    ticket: Option<Ticket>,
}

impl<F: Future + Unpin> Future for Bounded<'_, F> {
    type Output = Result<F::Output, TimedOut>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        // An answer that is here wins over a deadline passed meanwhile.
        if let Poll::Ready(v) = Pin::new(&mut this.fut).poll(cx) {
            if let Some(t) = this.ticket.take() {
                this.deadlines.inner.borrow_mut().finish(t);
            }
            return Poll::Ready(Ok(v));
        }
        let Some(t) = this.ticket else { return Poll::Pending };
        let mut s = this.deadlines.inner.borrow_mut();
        let slot = &mut s.slots[t.slot as usize];
        if slot.expired {
            s.finish(t);
            this.ticket = None;
            return Poll::Ready(Err(TimedOut(this.deadlines.timeout)));
        }
        if !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            slot.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl<F> Drop for Bounded<'_, F> {
    fn drop(&mut self) {
        // A request dropped unanswered (an abandoned call) frees its slot too.
        if let Some(t) = self.ticket.take() {
            if let Ok(mut s) = self.deadlines.inner.try_borrow_mut() {
                s.finish(t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::{pending, ready};

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
    }

    #[test]
    fn an_answer_in_time_is_returned_and_frees_its_place() {
        let d = Deadlines::new(Duration::from_secs(1));
        d.attach(true);
        let now = Instant::now();
        assert_eq!(block_on(d.bound(now, ready(7))), Ok(7));
        // Its queue entry no longer matches a live request: the sweep drops it.
        assert_eq!(d.queued(), 1);
        assert_eq!(d.sweep(now), None);
        assert_eq!(d.queued(), 0);
    }

    #[test]
    fn a_request_past_its_deadline_fails_when_swept() {
        let d = Deadlines::new(Duration::from_millis(50));
        d.attach(true);
        let t0 = Instant::now();
        let r = block_on(async {
            let mut a = std::pin::pin!(d.bound(t0, pending::<()>()));
            let mut b = std::pin::pin!(d.bound(t0 + Duration::from_millis(30), pending::<()>()));
            let waker = futures::task::noop_waker();
            let mut cx = Context::from_waker(&waker);
            assert!(a.as_mut().poll(&mut cx).is_pending());
            assert!(b.as_mut().poll(&mut cx).is_pending());
            // Nothing is due yet; the next due time is the first request's.
            assert_eq!(d.sweep(t0), Some(t0 + Duration::from_millis(50)));
            // Past the first deadline only: the first fails, the second still waits.
            assert_eq!(d.sweep(t0 + Duration::from_millis(60)), Some(t0 + Duration::from_millis(80)));
            let first = a.as_mut().poll(&mut cx);
            assert!(b.as_mut().poll(&mut cx).is_pending());
            first
        });
        assert_eq!(r, Poll::Ready(Err(TimedOut(Duration::from_millis(50)))));
    }

    #[test]
    fn without_a_loop_a_tokio_timer_bounds_the_request() {
        let d = Deadlines::new(Duration::from_millis(20));
        let started = Instant::now();
        assert_eq!(block_on(d.bound(started, pending::<()>())), Err(TimedOut(Duration::from_millis(20))));
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert_eq!(d.queued(), 0);
    }

    #[test]
    fn a_dropped_request_frees_its_slot_for_the_next() {
        let d = Deadlines::new(Duration::from_secs(1));
        d.attach(true);
        let now = Instant::now();
        block_on(async {
            let waker = futures::task::noop_waker();
            let mut cx = Context::from_waker(&waker);
            {
                let mut a = std::pin::pin!(d.bound(now, pending::<()>()));
                assert!(a.as_mut().poll(&mut cx).is_pending());
            }
            assert_eq!(d.bound(now, ready(1)).await, Ok(1));
        });
        assert_eq!(d.inner.borrow().slots.len(), 1, "the slot was reused");
        assert_eq!(d.sweep(now + Duration::from_secs(5)), None);
    }
}
