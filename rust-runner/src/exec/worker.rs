//! One worker's loop over a span (the warmup, then the measured span): it starts calls up to the
//! concurrency (paced by the rate), records each finished one, sends a sample per sampling period and
//! corun stamps, and at the span's end drains or abandons the calls still in flight.

use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use rune::Vm;

use super::call::{keep_vm, CallError, Calls, Waiting};
use super::pacing::{RateLimiter, Span};
use super::{Msg, PhaseSpec, Sample, Shared};
use crate::corun::Stamps;
use crate::scripting::context::Context;
use crate::scripting::deadline::Deadlines;

const PRINTED_ERRORS: u64 = 5;

/// The grid of the loop's request-timeout timer (scripting/deadline.rs).
const EXPIRY_TICK: Duration = Duration::from_millis(10);

/// How often a measuring worker stamps its CPU time for corun (when the sampling period is longer).
const STAMP_EVERY: Duration = Duration::from_millis(10);

pub(super) struct Worker {
    pub(super) index: usize,
    pub(super) count: usize,
    /// The phase's common origin for the workers' corun stamps.
    pub(super) origin: Instant,
    pub(super) calls: Calls,
    /// The program never waits on a future (scripting::Program::may_await): its calls run in place in
    /// the loop (`call_now`), without a future.
    pub(super) sync: bool,
}

impl Worker {
    /// The warmup: the same loop, nothing recorded (the requests' statistics are dropped too).
    pub(super) async fn warm_up(&self, spec: &PhaseSpec, tx: &mpsc::Sender<Msg>, shared: &Shared) {
        if let Some(warm) = spec.warmup {
            if !shared.stop.load(Ordering::Relaxed) && !crate::sys::interrupted() {
                self.run_loop(spec, warm, None, tx, shared).await;
            }
        }
    }

    /// The measured span, one sample per sampling period sent to the main thread; its elapsed time
    /// and this worker's corun stamps.
    pub(super) async fn measure(&self, spec: &PhaseSpec, tx: &mpsc::Sender<Msg>, shared: &Shared) -> (Duration, Option<Stamps>) {
        if shared.stop.load(Ordering::Relaxed) {
            return (Duration::ZERO, None);
        }
        let mut stamps = Stamps::begin(self.origin);
        let elapsed = self.run_loop(spec, spec.span, Some(&mut stamps), tx, shared).await;
        stamps.end();
        (elapsed, Some(stamps))
    }

    /// Runs cycles until the span is over (or a stop); when measured (`stamps` given) it sends samples
    /// and stamps whether the worker was running (corun.rs). Its phases: set-up, the loop (polled
    /// until the span is over), the drain of the calls still in flight, and the last sample.
    async fn run_loop(&self, spec: &PhaseSpec, span: Span, mut stamps: Option<&mut Stamps>, tx: &mpsc::Sender<Msg>, shared: &Shared) -> Duration {
        let measure = stamps.is_some();
        let mut st = self.set_up(spec, span);
        std::future::poll_fn(|cx| self.poll_cycles(&mut st, spec, &mut stamps, measure, tx, shared, cx)).await;
        self.finish(st, measure, tx)
    }

    /// Set-up: this worker's share of the span, its rate, its first sample and the loop's timers.
    fn set_up(&self, spec: &PhaseSpec, span: Span) -> LoopState {
        let start = Instant::now();
        // This loop sweeps the context's request deadlines while it runs (scripting/deadline.rs).
        let deadlines = self.calls.ctx.borrow_ref::<Context>().map(|c| {
            c.reset_start(start);
            c.deadlines.clone()
        });
        let deadlines = deadlines.ok();
        if let Some(d) = &deadlines {
            d.attach(true);
        }
        let n = self.count as u64;
        let me = self.index as u64;
        // This worker's cycles: me, me + n, me + 2n, … (no shared counter to fight over).
        let my_cycles = match span {
            Span::Cycles(total) => Some(total / n + u64::from(me < total % n)),
            Span::Time(_) => None,
        };
        let deadline = match span {
            Span::Time(d) => Some(start + d),
            Span::Cycles(_) => None,
        };
        let limiter = spec.rate.map(|r| RateLimiter::new(start, r / n as f64, me as f64 / n as f64));
        let with_service = limiter.is_some();
        LoopState {
            start,
            deadlines,
            n,
            me,
            my_cycles,
            deadline,
            limiter,
            with_service,
            sample: Sample::new(0, with_service),
            // Corun stamps are taken at sampling boundaries only: a check per call cost the empty
            // workload ~10% here (3.54M vs 3.14M calls/s, interleaved), a stamp per period costs nothing.
            next_boundary: start + spec.sampling.min(STAMP_EVERY),
            next_sample: start + spec.sampling,
            inflight: FuturesUnordered::new(),
            vm: None,
            timer: Box::pin(tokio::time::sleep(Duration::from_secs(3600))),
            // Wakes the loop when the oldest request comes due: armed on a 10-ms grid, so that it is re-armed
            // about a hundred times a second at most, not per request.
            expiry: Box::pin(tokio::time::sleep(Duration::from_secs(3600))),
            expiry_at: None,
            k: 0,
            now: start,
            last_end: start,
            abandon_at: None,
        }
    }

    /// Counts one finished call in the sample; errors count towards --max-errors.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn record(&self, sample: &mut Sample, r: Result<(), CallError>, origin: Instant, started: Instant, end: Instant, shared: &Shared, spec: &PhaseSpec, measure: bool) {
        // A failed call is counted out of line: the path of a call that succeeded stays short.
        if let Err(e) = r {
            if !self.record_error(sample, e, shared, spec, measure) {
                return;
            }
        }
        sample.cycles += 1;
        let _ = sample.cycle_ns.record((end - origin).as_nanos().max(1) as u64);
        if let Some(h) = sample.service_ns.as_mut() {
            let _ = h.record((end - started).as_nanos().max(1) as u64);
        }
    }

    /// A failed call: a failed cycle (true: it is counted as a cycle too) or a budget's breach (false).
    #[cold]
    #[inline(never)]
    fn record_error(&self, sample: &mut Sample, e: CallError, shared: &Shared, spec: &PhaseSpec, measure: bool) -> bool {
        let msg = match e {
            CallError::Budget(msg) => {
                // Not a cycle: the call was stopped unfinished (counted as abandoned), the phase ends
                // and fails with the first breach, after its partial report is saved.
                sample.abandoned += 1;
                if let Ok(mut b) = shared.breach.lock() {
                    let phase = if measure { spec.phase.to_string() } else { format!("{} (warmup)", spec.phase) };
                    b.get_or_insert(format!("{phase}: {msg}"));
                }
                shared.stop.store(true, Ordering::Relaxed);
                return false;
            }
            CallError::Cycle(msg) => msg,
        };
        sample.errors += 1;
        let total = shared.errors.fetch_add(1, Ordering::Relaxed) + 1;
        if total <= PRINTED_ERRORS {
            eprintln!("error in cycle (worker {}): {msg}", self.index);
        }
        if total > shared.max_errors {
            if !shared.stop.swap(true, Ordering::Relaxed) {
                eprintln!("stopping: more than {} errors (--max-errors)", shared.max_errors);
            }
        }
        true
    }

    /// The loop, one poll of it: takes finished calls, closes samples at their boundaries and starts
    /// calls up to the concurrency, until the span is over and the drain is done (`Ready`).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn poll_cycles(
        &self,
        st: &mut LoopState,
        spec: &PhaseSpec,
        stamps: &mut Option<&mut Stamps>,
        measure: bool,
        tx: &mpsc::Sender<Msg>,
        shared: &Shared,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<()> {
        let mut spins = 0u32;
        // The heap room the next call's future is built and polled in: given back by a call that
        // completes on its first poll, so most calls cost no allocation and no copy of their future.
        let mut room = crate::alloc::Room::new();
        // Calls that never complete (a script in `loop {}` yields every slice) must still let the
        // deadline and the sampling boundary pass: the clock is read once per poll, not only per completion.
        st.now = Instant::now();
        if let Some(due) = st.deadlines.as_ref().and_then(|d| d.sweep(st.now)) {
            let tick = st.start + EXPIRY_TICK * ((due - st.start).as_nanos().div_ceil(EXPIRY_TICK.as_nanos()) as u32);
            if st.expiry_at != Some(tick) {
                st.expiry.as_mut().reset(tick.into());
                st.expiry_at = Some(tick);
            }
            // Pending (the tick is after `due`, which is after `now`): registers this task's waker.
            let _ = st.expiry.as_mut().poll(cx);
        }
        loop {
            // Completed calls first, so their latency is taken as soon as we know of them.
            // (An empty set is skipped: polling it would still register the waker, an atomic op.)
            while !st.inflight.is_empty() {
                // A call that waited may have shared the budget with others meanwhile: its VM's
                // size cannot be told (`keep_vm`), so it is dropped.
                let Poll::Ready(Some((r, origin, started))) = st.inflight.poll_next_unpin(cx) else { break };
                st.now = Instant::now();
                st.last_end = st.now;
                self.record(&mut st.sample, r, origin, started, st.now, shared, spec, measure);
            }
            if st.now >= st.next_boundary {
                self.boundary(st, spec, stamps, measure, tx);
            }
            if !self.more(st, shared) {
                match self.drain(st, spec, shared, cx) {
                    ControlFlow::Break(done) => return done,
                    ControlFlow::Continue(()) => continue,
                }
            }
            if st.inflight.len() >= spec.concurrency {
                return Poll::Pending;
            }
            let origin = match st.limiter.as_mut() {
                Some(l) => {
                    let due = l.due();
                    if due > st.now {
                        st.now = Instant::now();
                        if due > st.now {
                            st.timer.as_mut().reset(due.into());
                            if st.timer.as_mut().poll(cx).is_pending() {
                                return Poll::Pending;
                            }
                            continue;
                        }
                    }
                    l.take()
                }
                None => st.now,
            };
            let cycle = st.me + st.k * st.n;
            st.k += 1;
            let mut vm = self.calls.vm_for_call(st.vm.take());
            let budget_left = rune::alloc::limit::get();
            let started = st.now;
            if self.sync {
                let r = self.calls.call_now(&mut vm, cycle, &started, || self.interlude(st, spec, stamps, measure, tx, shared));
                vm.clear();
                st.vm = keep_vm(vm, budget_left);
                st.now = Instant::now();
                match r {
                    Some(r) => {
                        st.last_end = st.now;
                        self.record(&mut st.sample, r, origin, started, st.now, shared, spec, measure);
                    }
                    None => self.abandon(st, 1, spec, shared),
                }
            } else {
                let mut fut = room.place(|| self.calls.call(cycle, started, vm));
                match fut.as_mut().poll(cx) {
                    // The common case of a script that does no I/O: done on the first poll.
                    Poll::Ready((r, vm)) => {
                        room.give_back(fut);
                        st.vm = keep_vm(vm, budget_left);
                        st.now = Instant::now();
                        st.last_end = st.now;
                        self.record(&mut st.sample, r, origin, started, st.now, shared, spec, measure);
                    }
                    Poll::Pending => st.inflight.push(Waiting { fut, origin, started }),
                }
            }
            spins += 1;
            if spins >= 4096 {
                // Let the connection tasks on this runtime run.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        }
    }

    /// A sampling boundary passed (`st.now`): the corun stamp, and the sample when its period is over.
    fn boundary(&self, st: &mut LoopState, spec: &PhaseSpec, stamps: &mut Option<&mut Stamps>, measure: bool, tx: &mpsc::Sender<Msg>) {
        if let Some(s) = stamps.as_deref_mut() {
            s.tick(st.now);
        }
        if st.now >= st.next_sample {
            if measure {
                let mut s = Sample::new(st.sample.index + 1, st.with_service);
                std::mem::swap(&mut s, &mut st.sample);
                if let Ok(c) = self.calls.ctx.borrow_ref::<Context>() {
                    s.req = std::mem::take(&mut *c.stats.borrow_mut());
                }
                let _ = tx.send(Msg::Sample(self.index, s));
            }
            while st.next_sample <= st.now {
                st.next_sample += spec.sampling;
            }
        }
        while st.next_boundary <= st.now {
            st.next_boundary += spec.sampling.min(STAMP_EVERY);
        }
    }

    /// Whether the span goes on: no stop, no Ctrl-C, cycles and time left.
    #[inline]
    fn more(&self, st: &LoopState, shared: &Shared) -> bool {
        !shared.stop.load(Ordering::Relaxed)
            && !crate::sys::interrupted()
            && st.my_cycles.is_none_or(|m| st.k < m)
            && st.deadline.is_none_or(|d| st.now < d)
    }

    /// What the loop does while a call run in place (`call_now`) computes on, every
    /// `CHECKS_PER_YIELD` slices, where a call in a future would have given it a turn: the clock, the
    /// sampling boundaries, and the drain's rule once the span is over. False: abandon the call.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn interlude(&self, st: &mut LoopState, spec: &PhaseSpec, stamps: &mut Option<&mut Stamps>, measure: bool, tx: &mpsc::Sender<Msg>, shared: &Shared) -> bool {
        st.now = Instant::now();
        if st.now >= st.next_boundary {
            self.boundary(st, spec, stamps, measure, tx);
        }
        self.more(st, shared) || !self.abandons(st, spec, shared)
    }

    /// Once the span is over: whether the calls still running are dropped now. A stuck request or a
    /// script that never returns (`loop {}`) must not keep the phase alive forever: after the drain
    /// time (at once on Ctrl-C or a budget breach, which end the phase as a partial one) they are.
    fn abandons(&self, st: &mut LoopState, spec: &PhaseSpec, shared: &Shared) -> bool {
        let now_ = Instant::now();
        let limit = *st.abandon_at.get_or_insert(now_ + spec.drain);
        crate::sys::interrupted() || shared.breach.lock().is_ok_and(|b| b.is_some()) || now_ >= limit
    }

    /// Counts `n` calls dropped unfinished, saying so when the drain time (not a stop) dropped them.
    #[cold]
    fn abandon(&self, st: &mut LoopState, n: u64, spec: &PhaseSpec, shared: &Shared) {
        st.sample.abandoned += n;
        if !crate::sys::interrupted() && !shared.breach.lock().is_ok_and(|b| b.is_some()) {
            eprintln!("worker {}: abandoned {n} calls still running {:?} after the end of the phase", self.index, spec.drain);
        }
    }

    /// The drain, once the span is over: waits for the calls still in flight, up to the drain time.
    /// `Break(Ready)` when the phase is over, `Break(Pending)` to wait, `Continue` to take calls again.
    fn drain(&self, st: &mut LoopState, spec: &PhaseSpec, shared: &Shared, cx: &mut std::task::Context<'_>) -> ControlFlow<Poll<()>> {
        if st.inflight.is_empty() {
            return ControlFlow::Break(Poll::Ready(()));
        }
        if self.abandons(st, spec, shared) {
            let n = st.inflight.len() as u64;
            st.inflight.clear();
            self.abandon(st, n, spec, shared);
            return ControlFlow::Break(Poll::Ready(()));
        }
        let limit = st.abandon_at.expect("set by abandons");
        if st.timer.deadline() != limit.into() {
            st.timer.as_mut().reset(limit.into());
        }
        // Polled so that the timer registers this task's waker.
        if st.timer.as_mut().poll(cx).is_ready() {
            return ControlFlow::Continue(());
        }
        ControlFlow::Break(Poll::Pending)
    }

    /// After the loop: the deadlines detached, the last (partial) sample sent; the span's length.
    fn finish(&self, mut st: LoopState, measure: bool, tx: &mpsc::Sender<Msg>) -> Duration {
        if let Some(d) = &st.deadlines {
            d.attach(false);
        }

        if measure {
            if let Ok(c) = self.calls.ctx.borrow_ref::<Context>() {
                st.sample.req = std::mem::take(&mut *c.stats.borrow_mut());
            }
            let _ = tx.send(Msg::Sample(self.index, st.sample));
        } else if let Ok(c) = self.calls.ctx.borrow_ref::<Context>() {
            // Warmup requests are not part of the measurement.
            let _ = std::mem::take(&mut *c.stats.borrow_mut());
        }
        st.last_end - st.start
    }
}


/// What the worker's loop keeps between polls over one span (warmup or measured), made by `set_up`.
struct LoopState {
    start: Instant,
    deadlines: Option<Rc<Deadlines>>,
    /// Workers, and this one's index: its cycles are me, me + n, …
    n: u64,
    me: u64,
    my_cycles: Option<u64>,
    deadline: Option<Instant>,
    limiter: Option<RateLimiter>,
    with_service: bool,
    sample: Sample,
    next_boundary: Instant,
    next_sample: Instant,
    inflight: FuturesUnordered<Waiting>,
    /// The emptied VM of the last call that completed on its first poll, for the next call.
    vm: Option<Box<Vm>>,
    timer: Pin<Box<tokio::time::Sleep>>,
    expiry: Pin<Box<tokio::time::Sleep>>,
    expiry_at: Option<Instant>,
    /// Cycles started by this worker.
    k: u64,
    now: Instant,
    last_end: Instant,
    /// Set when the phase is over: calls still in flight after this are abandoned.
    abandon_at: Option<Instant>,
}
