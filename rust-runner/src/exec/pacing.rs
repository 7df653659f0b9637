//! What a phase's cycles are and how far each may go: the span (cycles or time, split over the
//! workers), the mix of functions a cycle picks from, the rate pacing of the calls' intended starts,
//! and the script VM's budgets.

use std::time::{Duration, Instant};

use rune::Hash;

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
    pub(super) fn memory_breach(&self, e: &str) -> Option<String> {
        e.contains("Failed to allocate").then(|| {
            format!("the script went over its memory budget (--script-memory {} MiB): {e}", self.memory >> 20)
        })
    }
}

impl Budgets {
    pub(super) fn stack_breach(&self) -> String {
        format!(
            "a script call nested deeper than its native stack budget (--script-stack {} MiB): async calls awaited inside each other, or script functions called back by native ones (iter().map(f)), nest the thread's stack",
            self.stack >> 20
        )
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
