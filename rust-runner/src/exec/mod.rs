//! The measuring loop: one worker thread per CPU, each with its own single-threaded tokio runtime, its own
//! script context and (per-thread mode) its own copy of the compiled program. Workers share nothing they
//! write per call; they report one sample per sampling period to the main thread over a channel.
//!
//! Cut at its seams: `pacing` (span, function mix, rate, budgets), `worker` (one worker's loop over a
//! span: samples, drain), `call` (one script call: in a future or in place, sliced for the budgets and
//! the watchdog; the VM kept between calls), `phase` (the driver: threads, barriers, the main thread's
//! gathering of samples). This file holds what they pass each other.

mod call;
mod pacing;
mod phase;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::corun::Stamps;
use crate::scripting::context::RequestStats;

pub use call::call_once;
pub use pacing::{Budgets, FnMix, Span};
pub use phase::run_phase;

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
