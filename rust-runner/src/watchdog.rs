//! The watchdog: `--script-time` from outside the script's thread. Rune's running VM holds the thread's
//! instruction budget while a script function called back by a native one runs (`iter().map(|x| {
//! loop {} })`): that nested VM gets an unlimited budget, so the per-slice check (exec::call::call_sliced)
//! never runs, nothing inside the thread can stop it, and the first SIGTERM only sets the stop flag.
//!
//! Every thread that runs script calls publishes, per poll of a call's VM (exec::call::Sliced), a counter
//! that is odd while the poll runs and even once it has returned (two plain stores to the thread's own
//! cache line). One watchdog thread per process looks every `PERIOD`: a thread whose counter stayed at
//! the same odd value for longer than the call's `--script-time` plus `grace` is stuck inside one poll,
//! where the runner cannot pause it. A call waiting for Cassandra returns `Pending` (the counter is
//! even), so waiting never counts; a call computing normally returns to its check every 10k
//! instructions (well under a millisecond).
//!
//! What then happens is the thread's owner's: `on_stuck` gets the line and says whether the command
//! will end itself (the measured phase: the other workers stop and the partial report is saved); if
//! not (schema, erase, prepare, the warmup), or if the command has not ended `REPORT_WAIT` later, the
//! watchdog prints the line and ends the process with exit 1 (the stuck thread cannot be joined).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often the watchdog looks.
const PERIOD: Duration = Duration::from_millis(200);

/// How long the command may take to end itself (save the partial report) once a stuck call is known.
const REPORT_WAIT: Duration = Duration::from_secs(20);

/// The slack past `--script-time` before a call is called stuck: the larger of 1 s and 10%.
pub fn grace(limit: Duration) -> Duration {
    (limit / 10).max(Duration::from_secs(1))
}

/// One thread's counter, alone on its cache line (the watchdog reads it five times a second).
#[repr(align(128))]
#[derive(Default)]
pub struct Beat(AtomicU64);

std::thread_local! {
    /// The watched thread's counter (null: not watched).
    static CURRENT: Cell<*const Beat> = const { Cell::new(std::ptr::null()) };
}

/// Marks the start (`enter`) and the end (`leave`) of one poll of a script call's VM on this thread.
/// Only this thread writes its counter: a load and a store, no atomic read-modify-write.
#[inline(always)]
pub fn enter() {
    bump();
}

#[inline(always)]
pub fn leave() {
    bump();
}

#[inline(always)]
fn bump() {
    let b = CURRENT.with(|c| c.get());
    if !b.is_null() {
        // SAFETY: set by `watch`, cleared by its guard's drop on this same thread; the Arc it points
        // into is held by that guard.
        let b = unsafe { &*b };
        b.0.store(b.0.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }
}

/// Told what was stuck when the thread is; returns the command's line (the phase named) and whether
/// the command will end itself.
pub type OnStuck = Box<dyn Fn(&str) -> (String, bool) + Send>;

struct Entry {
    beat: Arc<Beat>,
    limit: Duration,
    on_stuck: OnStuck,
    /// The odd value last seen, and when it was first seen.
    seen: u64,
    since: Instant,
    fired: bool,
}

static ENTRIES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static STARTED: OnceLock<()> = OnceLock::new();

/// Watches the calling thread's script calls until the guard is dropped (on this thread); `limit` is
/// their `--script-time`.
pub fn watch(limit: Duration, on_stuck: OnStuck) -> Guard {
    let beat = Arc::new(Beat::default());
    CURRENT.with(|c| c.set(Arc::as_ptr(&beat)));
    let entry = Entry { beat: beat.clone(), limit, on_stuck, seen: 0, since: Instant::now(), fired: false };
    ENTRIES.lock().unwrap_or_else(|e| e.into_inner()).push(entry);
    STARTED.get_or_init(|| {
        // A process that cannot start it runs unwatched, as before (said once).
        if let Err(e) = std::thread::Builder::new().name("watchdog".into()).spawn(run) {
            eprintln!("runner: cannot start the script watchdog ({e}): a stuck native callback will not be stopped");
        }
    });
    Guard(beat)
}

/// Stops watching the thread when dropped.
pub struct Guard(Arc<Beat>);

impl Drop for Guard {
    fn drop(&mut self) {
        CURRENT.with(|c| {
            if c.get() == Arc::as_ptr(&self.0) {
                c.set(std::ptr::null());
            }
        });
        ENTRIES.lock().unwrap_or_else(|e| e.into_inner()).retain(|e| !Arc::ptr_eq(&e.beat, &self.0));
    }
}

/// The line for a call stuck `took` inside one poll.
fn stuck_line(took: Duration, limit: Duration) -> String {
    format!(
        "a script call computed for {:.1} s without coming back to the runner's checks, more than its budget (--script-time {:?}) plus the watchdog's grace of {:?}: \
         it is stuck where the runner cannot pause it (a script function called back by a native one, e.g. iter().map(f))",
        took.as_secs_f64(),
        limit,
        grace(limit)
    )
}

fn run() {
    let mut end_by: Option<(Instant, String)> = None;
    loop {
        std::thread::sleep(PERIOD);
        let now = Instant::now();
        if let Some((t, line)) = &end_by {
            if now >= *t {
                exit(&format!("{line}; no report: the command did not end within {REPORT_WAIT:?} of it"));
            }
        }
        let mut entries = ENTRIES.lock().unwrap_or_else(|e| e.into_inner());
        for e in entries.iter_mut() {
            let v = e.beat.0.load(Ordering::Relaxed);
            if v % 2 == 0 || v != e.seen {
                e.seen = v;
                e.since = now;
                continue;
            }
            let took = now - e.since;
            if e.fired || took <= e.limit.saturating_add(grace(e.limit)) {
                continue;
            }
            e.fired = true;
            let (line, ends) = (e.on_stuck)(&stuck_line(took, e.limit));
            if ends {
                end_by.get_or_insert((now + REPORT_WAIT, line));
            } else {
                exit(&format!("{line}; no report"));
            }
        }
    }
}

/// Ends the process from the watchdog: the stuck thread can be neither stopped nor joined.
fn exit(line: &str) -> ! {
    eprintln!("runner: {line}");
    std::process::exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grace_is_a_second_or_a_tenth() {
        assert_eq!(grace(Duration::from_secs(2)), Duration::from_secs(1));
        assert_eq!(grace(Duration::from_secs(60)), Duration::from_secs(6));
    }

    #[test]
    fn a_poll_makes_the_counter_odd_then_even() {
        let g = watch(Duration::from_secs(3600), Box::new(|m| (m.to_string(), true)));
        let v0 = g.0 .0.load(Ordering::Relaxed);
        enter();
        assert_eq!(g.0 .0.load(Ordering::Relaxed), v0 + 1);
        leave();
        assert_eq!(g.0 .0.load(Ordering::Relaxed) % 2, 0);
        drop(g);
        // Unwatched: nothing to write.
        enter();
        leave();
    }
}
