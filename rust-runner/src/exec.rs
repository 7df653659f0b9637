//! The measuring loop: one worker thread per CPU, each with its own single-threaded tokio runtime, its own
//! script context and (per-thread mode) its own copy of the compiled program. Workers share nothing they
//! write per call; they report one sample per sampling period to the main thread over a channel.

use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::task::Poll;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use futures::stream::{FuturesUnordered, StreamExt};
use hdrhistogram::Histogram;
use rune::runtime::{GeneratorState, RuntimeContext, Stack, TypeHash, Unit};
use rune::{Hash, Value, Vm};

use crate::scripting::context::{error_message, Context, ContextSeed, RequestStats};
use crate::scripting::deadline::Deadlines;
use crate::corun::{corun_pct, Stamps};
use crate::scripting::{Program, Sharing};

/// How long a phase lasts: a number of cycles (split over workers) or a time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Span {
    Cycles(u64),
    Time(Duration),
}

impl std::str::FromStr for Span {
    type Err = String;
    fn from_str(s: &str) -> Result<Span, String> {
        if let Ok(n) = s.trim().replace('_', "").parse::<u64>() {
            return Ok(Span::Cycles(n));
        }
        crate::sys::parse_duration(s)
            .map(Span::Time)
            .ok_or_else(|| format!("'{s}' is neither a cycle count nor a duration like 10s"))
    }
}

/// Functions called by the loop, picked per cycle by weight (`-f read:3 -f write:1`).
#[derive(Clone, Debug)]
pub struct FnMix {
    hashes: Vec<Hash>,
    /// Cumulative weights; a cycle picks the first entry above `hash(i) % total`.
    cumulative: Vec<u64>,
}

impl FnMix {
    pub fn new(specs: &[(String, u64)]) -> FnMix {
        let mut total = 0;
        let mut cumulative = Vec::new();
        for (_, w) in specs {
            total += *w;
            cumulative.push(total);
        }
        FnMix {
            hashes: specs.iter().map(|(n, _)| Hash::type_hash([n.as_str()])).collect(),
            cumulative,
        }
    }

    #[inline]
    pub fn pick(&self, cycle: u64) -> Hash {
        if self.hashes.len() == 1 {
            return self.hashes[0];
        }
        let total = *self.cumulative.last().unwrap();
        let x = crate::scripting::functions::mix64(cycle) % total;
        let idx = self.cumulative.iter().position(|&c| x < c).unwrap_or(0);
        self.hashes[idx]
    }
}

/// Evenly spaced intended start times for one worker (its share of `--rate`).
#[derive(Clone, Debug)]
pub struct RateLimiter {
    start: Instant,
    interval_ns: f64,
    issued: u64,
}

impl RateLimiter {
    /// `offset` (0..1) staggers workers so that together they issue evenly spaced calls.
    pub fn new(start: Instant, per_second: f64, offset: f64) -> RateLimiter {
        let interval_ns = 1e9 / per_second;
        RateLimiter { start: start + Duration::from_nanos((interval_ns * offset) as u64), interval_ns, issued: 0 }
    }

    /// When the next call is meant to start.
    #[inline]
    pub fn due(&self) -> Instant {
        self.start + Duration::from_nanos((self.issued as f64 * self.interval_ns) as u64)
    }

    #[inline]
    pub fn take(&mut self) -> Instant {
        let t = self.due();
        self.issued += 1;
        t
    }
}

/// The script VM's limits, in every phase (schema, erase, prepare, load, run): memory its values may
/// hold per thread (rune's allocator limit), how long one call may compute, and how deep its calls may
/// nest. Going over one ends the phase with one line naming the budget (exit 1), not an abort or OOM.
#[derive(Clone, Copy, Debug)]
pub struct Budgets {
    pub memory: usize,
    pub time: Duration,
    pub depth: usize,
    /// Native stack one call may use (alloc::guard_stack): async nesting grows it.
    pub stack: usize,
}

impl Budgets {
    /// The message for a breach of the memory budget, recognised in the VM's error.
    fn memory_breach(&self, e: &str) -> Option<String> {
        e.contains("Failed to allocate").then(|| {
            format!("the script went over its memory budget (--script-memory {} MiB): {e}", self.memory >> 20)
        })
    }
}

impl Budgets {
    fn stack_breach(&self) -> String {
        format!(
            "a script call nested deeper than its native stack budget (--script-stack {} MiB): async calls awaited inside each other, or script functions called back by native ones (iter().map(f)), nest the thread's stack",
            self.stack >> 20
        )
    }
}

/// Why a call failed: the script's own failure (a failed cycle) or a budget (ends the phase).
pub enum CallError {
    Cycle(String),
    Budget(String),
}

/// What one phase (warmup, load or run) does.
#[derive(Clone, Debug)]
pub struct PhaseSpec {
    /// "run" or "load": named in a budget's message.
    pub phase: &'static str,
    pub budgets: Budgets,
    pub functions: FnMix,
    pub span: Span,
    pub warmup: Option<Span>,
    /// Calls per second over all workers.
    pub rate: Option<f64>,
    pub concurrency: usize,
    pub sampling: Duration,
    pub max_errors: u64,
    /// How long calls still in flight may run after the phase ends (span over, stop, error limit)
    /// before they are abandoned; on Ctrl-C they are abandoned at once.
    pub drain: Duration,
}

/// Where the workers run: a CPU each (pinned) or unbound.
#[derive(Clone, Debug)]
pub struct Placement {
    pub threads: usize,
    pub cpus: Option<Vec<usize>>,
}

/// One worker's counts over one sampling period.
pub struct Sample {
    pub index: u64,
    pub cycles: u64,
    pub errors: u64,
    /// Calls still running when the phase ended, dropped unfinished (not counted in `cycles`).
    pub abandoned: u64,
    pub req: RequestStats,
    pub cycle_ns: Histogram<u64>,
    pub service_ns: Option<Histogram<u64>>,
}

impl Sample {
    #[cfg(test)]
    pub fn new_for_test(index: u64) -> Sample {
        Sample::new(index, false)
    }

    fn new(index: u64, with_service: bool) -> Sample {
        Sample {
            index,
            cycles: 0,
            errors: 0,
            abandoned: 0,
            req: RequestStats::new(),
            cycle_ns: Histogram::new(3).expect("histogram"),
            service_ns: with_service.then(|| Histogram::new(3).expect("histogram")),
        }
    }
}

/// Where a worker ran and where its heap was, for ran-on.csv (docs/instruments.md).
#[derive(Clone, Copy, Debug)]
pub struct Placed {
    pub worker: usize,
    pub pinned_to: i32,
    pub first_cpu: i32,
    pub last_cpu: i32,
    pub heap_node: i32,
}

pub enum Msg {
    Sample(usize, Sample),
    Done { elapsed: Duration, stamps: Option<Stamps>, placed: Placed },
    Failed(usize, String),
}

/// Limits shared by all workers; written only on errors or to stop, read every iteration. Alone on its
/// cache lines, so that no other allocation's writes make every worker's read of `stop` a miss.
#[repr(align(128))]
pub struct Shared {
    pub stop: AtomicBool,
    /// The first budget breach (prefixed with its phase): the phase ends, its report is saved as a
    /// partial one, and the command fails with it.
    pub breach: std::sync::Mutex<Option<String>>,
    pub errors: AtomicU64,
    pub max_errors: u64,
    /// Set once every worker has passed the warmup: a stuck call then ends the phase with a partial
    /// report; before, the watchdog ends the process (the other workers wait at the barrier).
    pub measuring: AtomicBool,
    /// Workers the watchdog found stuck in a call (crate::watchdog): never joined, their calls since
    /// their last sample missing.
    pub stuck: std::sync::Mutex<Vec<usize>>,
}

const PRINTED_ERRORS: u64 = 5;

/// The grid of the loop's request-timeout timer (scripting/deadline.rs).
const EXPIRY_TICK: Duration = Duration::from_millis(10);

/// How often a measuring worker stamps its CPU time for corun (when the sampling period is longer).
const STAMP_EVERY: Duration = Duration::from_millis(10);

struct Worker {
    index: usize,
    count: usize,
    /// The phase's common origin for the workers' corun stamps.
    origin: Instant,
    unit: Arc<Unit>,
    runtime: Arc<RuntimeContext>,
    ctx: Value,
    fns: FnMix,
    budgets: Budgets,
    /// The program never waits on a future (scripting::Program::may_await): its calls run in place in
    /// the loop (`call_now`), without a future.
    sync: bool,
}

/// A finished call: its result and its VM (emptied). Its intended and actual start stay in the loop
/// (a call that waits carries them in `Waiting`): moved through the call's future and its `Poll`,
/// two `Instant`s per call cost more than their copy (stores and loads that do not line up). The VM is
/// boxed for the same reason: moved by value (about 90 bytes) into and out of the future, it made an
/// empty call ×0.91 as fast; boxed, only its pointer moves.
type CallOutput = (Result<(), CallError>, Box<Vm>);
type CallFuture = Pin<Box<dyn Future<Output = CallOutput>>>;

/// A call that did not complete on its first poll, with its intended and actual start.
struct Waiting {
    fut: CallFuture,
    origin: Instant,
    started: Instant,
}

impl Future for Waiting {
    type Output = (Result<(), CallError>, Instant, Instant);
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let (origin, started) = (self.origin, self.started);
        self.fut.as_mut().poll(cx).map(|(r, _vm)| (r, origin, started))
    }
}

impl Worker {
    /// The VM for the next call: the one the last call left (`kept`, see `keep_vm`) or a new one.
    /// Either way the call takes its own references to the unit and context, as the `Vm` that Latte
    /// 0.29 makes per call does: in `shared` mode every worker updates the same two counts per call
    /// (seed 000), in `per-thread` mode its own. Keeping them per VM would be ×1.14 faster (8.35M
    /// against 7.35M empty calls/s here) but would make the two modes differ in more than where the
    /// counts are. Kept, a call makes and frees no VM and no stack.
    #[inline]
    fn vm_for_call(&self, kept: Option<Box<Vm>>) -> Box<Vm> {
        match kept {
            Some(mut vm) => {
                *vm.unit_mut() = self.unit.clone();
                *vm.context_mut() = self.runtime.clone();
                vm
            }
            None => Box::new(Vm::with_stack(self.runtime.clone(), self.unit.clone(), new_stack())),
        }
    }

    /// One call of a program that may wait, as a future, on the given VM, which it hands back
    /// emptied so that the loop can keep it (`keep_vm`). The future is not boxed here: the loop polls
    /// it where it will stay (`alloc::Room`).
    #[inline]
    fn call(&self, cycle: u64, started: Instant, mut vm: Box<Vm>) -> impl Future<Output = CallOutput> {
        let ctx = self.ctx.clone();
        let hash = self.fns.pick(cycle);
        let budgets = self.budgets;
        async move {
            let r = call_sliced(&mut vm, hash, (ctx, cycle as i64), &started, &budgets).await.and_then(|v| check_result(v).map_err(CallError::Cycle));
            // The values left on the stack are dropped (they count against --script-memory).
            vm.clear();
            (r, vm)
        }
    }

    /// One call of a program that never waits, run here to its end: the same slices, budgets and
    /// watchdog as `call_sliced`, without a future (rust-runner/README.md, "The worker keeps its VM").
    /// Such a call cannot give the loop a turn, so every `CHECKS_PER_YIELD` slices it runs the loop's
    /// own business in its place (`interlude`: the clock, the samples, and whether the call is to be
    /// abandoned); None when the interlude abandoned it. Latte runs such a call to its end too.
    #[inline]
    fn call_now(&self, vm: &mut Vm, cycle: u64, started: &Instant, mut interlude: impl FnMut() -> bool) -> Option<Result<(), CallError>> {
        let mut exec = match vm.execute(self.fns.pick(cycle), (self.ctx.clone(), cycle as i64)) {
            Ok(e) => e,
            Err(e) => return Some(Err(vm_error(e, &self.budgets))),
        };
        let mut checks = 0u32;
        loop {
            let mut stop = Stop::None;
            let Poll::Ready(r) = slice(&mut stop, || Poll::Ready(exec.resume())) else {
                unreachable!("a synchronous slice is always ready")
            };
            match slice_outcome(r, stop, exec.vm(), started, &self.budgets) {
                ControlFlow::Break(r) => return Some(r.and_then(|v| check_result(v).map_err(CallError::Cycle))),
                ControlFlow::Continue(()) => {
                    checks += 1;
                    if checks % CHECKS_PER_YIELD == 0 && !interlude() {
                        return None;
                    }
                }
            }
        }
    }

    /// The warmup: the same loop, nothing recorded (the requests' statistics are dropped too).
    async fn warm_up(&self, spec: &PhaseSpec, tx: &mpsc::Sender<Msg>, shared: &Shared) {
        if let Some(warm) = spec.warmup {
            if !shared.stop.load(Ordering::Relaxed) && !crate::sys::interrupted() {
                self.run_loop(spec, warm, None, tx, shared).await;
            }
        }
    }

    /// The measured span, one sample per sampling period sent to the main thread; its elapsed time
    /// and this worker's corun stamps.
    async fn measure(&self, spec: &PhaseSpec, tx: &mpsc::Sender<Msg>, shared: &Shared) -> (Duration, Option<Stamps>) {
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
        let deadlines = self.ctx.borrow_ref::<Context>().map(|c| {
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
            let mut vm = self.vm_for_call(st.vm.take());
            let budget_left = rune::alloc::limit::get();
            let started = st.now;
            if self.sync {
                let r = self.call_now(&mut vm, cycle, &started, || self.interlude(st, spec, stamps, measure, tx, shared));
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
                let mut fut = room.place(|| self.call(cycle, started, vm));
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
                if let Ok(c) = self.ctx.borrow_ref::<Context>() {
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
            if let Ok(c) = self.ctx.borrow_ref::<Context>() {
                st.sample.req = std::mem::take(&mut *c.stats.borrow_mut());
            }
            let _ = tx.send(Msg::Sample(self.index, st.sample));
        } else if let Ok(c) = self.ctx.borrow_ref::<Context>() {
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

/// Values a new VM stack has room for: enough for a small call (the empty workload's uses 2), so
/// that its stack need not grow and the VM can be kept for the next call (`keep_vm`). 32 values are
/// 512 bytes of --script-memory per call in flight.
const STACK_ROOM: usize = 32;

/// A VM stack with room for `STACK_ROOM` values. If the memory budget has no room left, an empty one:
/// the VM then meets the budget on its first push and reports it.
fn new_stack() -> Stack {
    rune::alloc::Vec::try_with_capacity(STACK_ROOM).map(Stack::from).unwrap_or_default()
}

/// The VM of a call that completed on its first poll (emptied), if it may be kept for the next call:
/// only when the memory budget left is what it was before the call (`budget_left`). A VM whose stack
/// or call frames grew (a deep call) changed it, and is dropped: kept, its room would stay charged to
/// --script-memory until the phase ends and could refuse a later call's values. So a kept VM is one
/// made by `vm_for_call` (rune's `Stack` does not tell its capacity), unless a call freed exactly as
/// many bytes of other values as its VM grew by. Kept, a call makes and frees no VM.
#[inline]
fn keep_vm(vm: Box<Vm>, budget_left: usize) -> Option<Box<Vm>> {
    (rune::alloc::limit::get() == budget_left).then_some(vm)
}

/// Instructions a call runs between two checks of its time and depth budgets. A script function
/// nests one call per instruction at most (`fn f(n) { f(n + 1) }` takes 4), so a call ends at most
/// `CHECK_SLICE` frames past `--script-depth` (2,500 for that one; 25,000 with the 100k slice before).
const CHECK_SLICE: usize = 10_000;

/// Checks between two yields to the worker's loop: every 100k instructions (about a millisecond of VM
/// work), so that a script stuck in `loop {}` still lets the loop see the deadline and Ctrl-C.
const CHECKS_PER_YIELD: u32 = 10;

/// Calls a script function as a future, stopping it every `CHECK_SLICE` instructions to check the
/// call's time (since `started`) and depth against the budgets, and giving control back to the
/// executor every `CHECKS_PER_YIELD` checks. The memory budget is the thread's (`limit::with` around
/// the runtime): an allocation past it fails in the VM. (A program that never waits runs its calls
/// in place instead: `Worker::call_now`.)
async fn call_sliced<A: rune::runtime::Args>(vm: &mut Vm, hash: Hash, args: A, started: &Instant, budgets: &Budgets) -> Result<Value, CallError> {
    let mut exec = vm.execute(hash, args).map_err(|e| vm_error(e, budgets))?;
    let mut checks = 0u32;
    loop {
        let mut stop = Stop::None;
        let r = {
            // Pinned on this future's own frame: no allocation per call.
            let fut = std::pin::pin!(exec.async_resume());
            (Sliced { fut, stop: &mut stop }).await
        };
        match slice_outcome(r, stop, exec.vm(), started, budgets) {
            ControlFlow::Break(r) => return r,
            ControlFlow::Continue(()) => {
                checks += 1;
                if checks % CHECKS_PER_YIELD == 0 {
                    YieldNow(false).await
                }
            }
        }
    }
}

/// What a slice's end means for its call: its end (the value returned, or the error that ends it),
/// or `Continue` when the VM only used up its slice within the budgets and is to be resumed.
#[inline]
fn slice_outcome(r: rune::runtime::VmResult<GeneratorState>, stop: Stop, vm: &Vm, started: &Instant, budgets: &Budgets) -> ControlFlow<Result<Value, CallError>> {
    match r.into_result() {
        Ok(GeneratorState::Complete(v)) => ControlFlow::Break(Ok(v)),
        Ok(GeneratorState::Yielded(_)) => ControlFlow::Break(Err(vm_error(rune::runtime::VmError::panic("a workload function must not `yield`"), budgets))),
        Err(e) => match slice_end(e, stop, vm, *started, budgets) {
            Some(e) => ControlFlow::Break(Err(e)),
            None => ControlFlow::Continue(()),
        },
    }
}

/// A VM error as a failed cycle, or as the memory budget's breach.
#[cold]
fn vm_error(e: rune::runtime::VmError, budgets: &Budgets) -> CallError {
    let msg = crate::scripting::describe_error(&e);
    match budgets.memory_breach(&msg) {
        Some(b) => CallError::Budget(b),
        None => CallError::Cycle(msg),
    }
}

/// Why a slice of a call ended in an error: the end of the call (a budget or the script's error), or
/// None when the VM only used up its slice within the budgets and can be resumed. Off the path of a
/// call that completes in its first slice.
#[cold]
fn slice_end(e: rune::runtime::VmError, stop: Stop, vm: &Vm, started: Instant, budgets: &Budgets) -> Option<CallError> {
    if stop == Stop::Stack {
        return Some(CallError::Budget(budgets.stack_breach()));
    }
    if stop != Stop::Exhausted || !e.to_string().contains("`limited`") {
        return Some(vm_error(e, budgets));
    }
    // The slice ran out inside a nested VM (a Rune future awaited by the call: the error carries a
    // location per VM it crossed). Rune 0.14 drops that execution on the halt, so the call cannot be
    // resumed; resuming it (as before) went on with `()` for the awaited value.
    if e.first_location().is_some() {
        return Some(CallError::Budget(format!(
            "an awaited script `async fn` ran {CHECK_SLICE} instructions (the runner's check slice) inside another, which the runner cannot pause: \
             make a function that computes this much a plain `fn`, or end the async recursion"
        )));
    }
    // The VM stopped before an instruction because the slice was used up: check the budgets.
    let depth = vm.call_frames().len();
    if depth > budgets.depth {
        return Some(CallError::Budget(format!(
            "a script call nested {depth} calls deep, more than its budget (--script-depth {})",
            budgets.depth
        )));
    }
    let took = started.elapsed();
    if took > budgets.time {
        return Some(CallError::Budget(format!(
            "a script call was still computing after {:.1} s, more than its budget (--script-time {:?})",
            took.as_secs_f64(),
            budgets.time
        )));
    }
    None
}

/// Why a slice of a call stopped, besides finishing or the script's own error.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    None,
    /// The instruction budget ran out.
    Exhausted,
    /// The call's nesting passed the thread's stack budget (alloc::guard_stack).
    Stack,
}

/// Polls a VM future with a fresh instruction budget per poll and notes whether it ran out, or whether
/// the poll went past the stack budget (then it ends the call, even if the poll was pending).
struct Sliced<'a, F> {
    fut: Pin<&'a mut F>,
    stop: &'a mut Stop,
}

impl<F, T> Future for Sliced<'_, F>
where
    F: Future<Output = rune::runtime::VmResult<T>>,
{
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let fut = this.fut.as_mut();
        slice(this.stop, move || fut.poll(cx))
    }
}

/// One slice of a call: `run` (a poll of the VM's future, or a synchronous resume) with a fresh
/// instruction budget, noting in `stop` whether the budget ran out or the run went past the stack
/// budget (then it ends the call, even if the poll was pending).
#[inline]
fn slice<T>(stop: &mut Stop, run: impl FnOnce() -> Poll<rune::runtime::VmResult<T>>) -> Poll<rune::runtime::VmResult<T>> {
    rune::runtime::budget::with(CHECK_SLICE, move || {
        // The watchdog sees a run that never returns (a native function's callback).
        crate::watchdog::enter();
        let p = run();
        crate::watchdog::leave();
        if crate::alloc::stack_passed() {
            *stop = Stop::Stack;
            return Poll::Ready(stack_stop());
        }
        if let Poll::Ready(rune::runtime::VmResult::Err(_)) = &p {
            // A budget left at zero: the VM halted for the budget, not for an error of the script.
            if !rune::runtime::budget::acquire().take() {
                *stop = Stop::Exhausted;
            }
        }
        p
    })
    .call()
}

/// The error that ends a call past its stack budget (named by `slice_end`).
#[cold]
fn stack_stop<T>() -> rune::runtime::VmResult<T> {
    rune::runtime::VmResult::panic("past the stack budget")
}

/// Returns `Pending` once (waking itself), so the worker's loop and the connection tasks get a turn.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// The value a script function returned: an `Err` counts as a failed cycle.
fn check_result(v: Value) -> Result<(), String> {
    if v.type_hash() == <Result<Value, Value>>::HASH {
        match rune::from_value::<Result<Value, Value>>(v) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(error_message(&e)),
            Err(e) => Err(e.to_string()),
        }
    } else {
        Ok(())
    }
}

/// Runs one phase on all workers; the main thread gathers samples as they come.
pub fn run_phase(
    program: &Program,
    sharing: Sharing,
    seed: &ContextSeed,
    spec: &PhaseSpec,
    placement: &Placement,
    mut on_sample: impl FnMut(usize, Sample),
) -> Result<PhaseOutcome> {
    let threads = placement.threads;
    let origin = Instant::now();
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        breach: std::sync::Mutex::new(None),
        errors: AtomicU64::new(0),
        max_errors: spec.max_errors,
        measuring: AtomicBool::new(false),
        stuck: std::sync::Mutex::new(Vec::new()),
    });
    // ready: every worker has its context (and connection); go: the measured phase starts.
    let ready = Arc::new(Barrier::new(threads + 1));
    let go = Arc::new(Barrier::new(threads + 1));
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut handles = Vec::new();
    let sync = !program.may_await;
    for w in 0..threads {
        let (unit, runtime) = (program.unit.clone(), program.runtime.clone());
        let seed = seed.clone();
        let spec = spec.clone();
        let cpu = placement.cpus.as_ref().map(|c| c[w]);
        let (tx, shared, ready, go) = (tx.clone(), shared.clone(), ready.clone(), go.clone());
        let stack = crate::alloc::script_thread_stack(spec.budgets.stack);
        let h = std::thread::Builder::new().name(format!("worker-{w}")).stack_size(stack).spawn(move || {
            crate::alloc::guard_stack(spec.budgets.stack);
            let _watched = watch_worker(w, &spec, &shared);
            if let Some(cpu) = cpu {
                if let Err(e) = crate::sys::pin_current_thread(cpu) {
                    let _ = tx.send(Msg::Failed(w, e.to_string()));
                }
            }
            // A worker that cannot start says why and still passes both barriers: the others wait there.
            let give_up = |e: String| {
                let _ = tx.send(Msg::Failed(w, e));
                ready.wait();
                go.wait();
            };
            // Copied here, not by the main thread (scripting::for_worker says why).
            let (unit, runtime) = match crate::scripting::for_worker(&unit, &runtime, sharing) {
                Ok(c) => c,
                Err(e) => return give_up(e.to_string()),
            };
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return give_up(e.to_string()),
            };
            // Every rune allocation on this thread counts against the worker's memory budget.
            rune::alloc::limit::with(spec.budgets.memory, || rt.block_on(async {
                let ctx = match Context::from_seed(&seed).await {
                    Ok(c) => c,
                    Err(e) => return give_up(e.to_string()),
                };
                let worker = Worker {
                    index: w,
                    count: threads,
                    origin,
                    unit,
                    runtime,
                    ctx: rune::to_value(ctx).expect("context value"),
                    fns: spec.functions.clone(),
                    budgets: spec.budgets,
                    sync,
                };
                ready.wait();
                worker.warm_up(&spec, &tx, &shared).await;
                go.wait();
                let first_cpu = crate::sys::current_cpu();
                let (elapsed, stamps) = worker.measure(&spec, &tx, &shared).await;
                // after the window, so that asking costs the measurement nothing
                let placed = Placed {
                    worker: w,
                    pinned_to: cpu.map_or(-1, |c| c as i32),
                    first_cpu,
                    last_cpu: crate::sys::current_cpu(),
                    heap_node: crate::sys::heap_node(),
                };
                let _ = tx.send(Msg::Done { elapsed, stamps, placed });
            }))
            .call();
        })?;
        handles.push(h);
    }
    drop(tx);
    ready.wait();
    let mut failures = Vec::new();
    while let Ok(Msg::Failed(w, e)) = rx.try_recv() {
        failures.push(format!("worker {w}: {e}"));
    }
    if !failures.is_empty() {
        shared.stop.store(true, Ordering::Relaxed);
    }
    // Warmup errors must not count towards the measured run's --max-errors.
    go.wait();
    shared.measuring.store(true, Ordering::Relaxed);
    let usage0 = crate::sys::Usage::now();
    shared.errors.store(0, Ordering::Relaxed);
    let t0 = Instant::now();
    let mut elapsed = Duration::ZERO;
    let mut stamps = Vec::new();
    let mut placed = Vec::new();
    while let Some(msg) = next_msg(&rx, &shared, &handles) {
        match msg {
            Msg::Sample(w, s) => on_sample(w, s),
            Msg::Done { elapsed: e, stamps: st, placed: p } => {
                elapsed = elapsed.max(e);
                stamps.extend(st);
                placed.push(p);
            }
            Msg::Failed(w, e) => failures.push(format!("worker {w}: {e}")),
        }
    }
    let wall = t0.elapsed();
    let usage1 = crate::sys::Usage::now();
    let stuck = shared.stuck.lock().map(|s| s.clone()).unwrap_or_default();
    for (w, h) in handles.into_iter().enumerate() {
        if !stuck.contains(&w) {
            h.join().map_err(|_| anyhow!("a worker thread panicked"))?;
        }
    }
    if !failures.is_empty() {
        return Err(anyhow!("{}", failures.join("; ")));
    }
    Ok(PhaseOutcome {
        breach: shared.breach.lock().ok().and_then(|mut b| b.take()).map(|b| with_stuck(b, &stuck)),
        elapsed: if elapsed.is_zero() { wall } else { elapsed },
        cpu_s: usage1.cpu_s() - usage0.cpu_s(),
        user_s: usage1.user_s - usage0.user_s,
        system_s: usage1.system_s - usage0.system_s,
        max_rss_bytes: usage1.max_rss_bytes,
        stopped_on_errors: shared.errors.load(Ordering::Relaxed) > spec.max_errors,
        corun_pct: if stamps.len() == threads { corun_pct(&stamps) } else { None },
        placed,
    })
}

/// The next message from the workers; None when they have all ended, or when every worker still
/// running is one the watchdog found stuck (it will never end: what it sent until then is taken).
fn next_msg(rx: &mpsc::Receiver<Msg>, shared: &Shared, handles: &[std::thread::JoinHandle<()>]) -> Option<Msg> {
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(m) => return Some(m),
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let stuck = shared.stuck.lock().map(|s| s.clone()).unwrap_or_default();
                if !stuck.is_empty() && handles.iter().enumerate().all(|(w, h)| stuck.contains(&w) || h.is_finished()) {
                    return rx.try_recv().ok();
                }
            }
        }
    }
}

/// The breach's line, naming the workers that were stuck and what of theirs the report lacks.
fn with_stuck(breach: String, stuck: &[usize]) -> String {
    if stuck.is_empty() {
        return breach;
    }
    let who: Vec<String> = stuck.iter().map(|w| w.to_string()).collect();
    format!(
        "{breach}; worker {} could not be stopped: its calls since its last sample (and its placement) are missing from the report",
        who.join(", ")
    )
}

/// Puts a worker's thread under the watchdog: a call stuck in the measured phase is a budget breach
/// (the other workers stop, the partial report is saved); in the warmup the process ends at once.
fn watch_worker(w: usize, spec: &PhaseSpec, shared: &Arc<Shared>) -> crate::watchdog::Guard {
    let shared = shared.clone();
    let phase = spec.phase;
    crate::watchdog::watch(
        spec.budgets.time,
        Box::new(move |m| {
            if !shared.measuring.load(Ordering::Relaxed) {
                return (format!("{phase} (warmup): {m}"), false);
            }
            if let Ok(mut s) = shared.stuck.lock() {
                s.push(w);
            }
            if let Ok(mut b) = shared.breach.lock() {
                b.get_or_insert(format!("{phase}: {m}"));
            }
            shared.stop.store(true, Ordering::Relaxed);
            (format!("{phase}: {m}"), true)
        }),
    )
}

pub struct PhaseOutcome {
    pub elapsed: Duration,
    pub cpu_s: f64,
    pub user_s: f64,
    pub system_s: f64,
    pub max_rss_bytes: u64,
    pub stopped_on_errors: bool,
    /// % of the measured span during which every worker was running (corun.rs); None when a worker
    /// did not measure (stopped before it began).
    pub corun_pct: Option<f64>,
    /// Each worker's CPUs and heap node, in the order they finished.
    pub placed: Vec<Placed>,
    /// The first budget breach, `phase: message` (`run (warmup): …` in the warmup): the phase ended
    /// there, and what was measured until then is a partial run.
    pub breach: Option<String>,
}

/// Calls one function once on the main thread (schema, erase, prepare), with the given context, under
/// the same budgets as a worker's calls (memory for the whole call, time and depth checked per slice).
pub fn call_once(rt: &tokio::runtime::Runtime, program: &Program, ctx: &Value, name: &str, budgets: &Budgets) -> Result<()> {
    let mut vm = Vm::new(program.runtime.clone(), program.unit.clone());
    let hash = Hash::type_hash([name]);
    let started = Instant::now();
    // The calling thread was started with alloc::script_thread_stack (main.rs).
    crate::alloc::guard_stack(budgets.stack);
    let who = name.to_string();
    let _watched = crate::watchdog::watch(budgets.time, Box::new(move |m| (format!("{who}: {m}"), false)));
    let call = || rt.block_on(call_sliced(&mut vm, hash, (ctx.clone(),), &started, budgets));
    match rune::alloc::limit::with(budgets.memory, call).call() {
        Ok(v) => check_result(v).map_err(|e| anyhow!("{name}: {e}")),
        Err(CallError::Cycle(e) | CallError::Budget(e)) => Err(anyhow!("{name}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_parse() {
        assert_eq!("1000".parse::<Span>().unwrap(), Span::Cycles(1000));
        assert_eq!("1_000".parse::<Span>().unwrap(), Span::Cycles(1000));
        assert_eq!("3s".parse::<Span>().unwrap(), Span::Time(Duration::from_secs(3)));
        assert!("x".parse::<Span>().is_err());
    }

    #[test]
    fn rate_limiter_spaces_calls_evenly() {
        let t0 = Instant::now();
        let mut l = RateLimiter::new(t0, 1000.0, 0.0);
        assert_eq!(l.take(), t0);
        assert_eq!(l.take(), t0 + Duration::from_millis(1));
        for _ in 0..998 {
            l.take();
        }
        assert_eq!(l.due(), t0 + Duration::from_secs(1));
        // Two workers at half the rate each, staggered by half an interval.
        let a = RateLimiter::new(t0, 500.0, 0.0);
        let b = RateLimiter::new(t0, 500.0, 0.5);
        assert_eq!(b.due() - a.due(), Duration::from_millis(1));
    }

    #[test]
    fn function_mix_respects_weights() {
        let mix = FnMix::new(&[("read".into(), 3), ("write".into(), 1)]);
        let read = Hash::type_hash(["read"]);
        let reads = (0..10_000u64).filter(|&i| mix.pick(i) == read).count();
        assert!((7000..8000).contains(&reads), "{reads}");
        let single = FnMix::new(&[("run".into(), 1)]);
        assert_eq!(single.pick(5), Hash::type_hash(["run"]));
    }
}
