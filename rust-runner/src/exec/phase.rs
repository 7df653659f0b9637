//! The phase driver: starts one worker thread per CPU (pinned, under the watchdog, with its runtime,
//! context and memory budget), lines them up at the warmup's and the measured span's barriers, gathers
//! their samples on the main thread, and returns the phase's outcome.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

use super::call::Calls;
use super::worker::Worker;
use super::{Msg, PhaseSpec, Placed, Placement, Sample, Shared};
use crate::corun::corun_pct;
use crate::scripting::context::{Context, ContextSeed};
use crate::scripting::{Program, Sharing};

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
                    calls: Calls {
                        unit,
                        runtime,
                        ctx: rune::to_value(ctx).expect("context value"),
                        fns: spec.functions.clone(),
                        budgets: spec.budgets,
                    },
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
