//! Did the workers really run at the same time? Seed 000's contention (every worker hitting the
//! same reference counts) exists only while workers run together; two workers that take turns on a
//! CPU (another process there, a VM's vCPUs not running together) measure no contention at all. The
//! same estimate as c-probes/corun.h: at least 250 µs apart (the worker's loop offers a stamp every
//! 10 ms, exec/worker.rs) a worker stamps the wall clock and its own CPU time; between two stamps it ran for
//! the CPU time it gained. `corun_pct` is the expected share of
//! the measured span during which every worker was running, each worker's running time taken as
//! spread evenly within its interval and independent of the others'.

use std::time::Instant;

/// 250 µs between stamps: a CPU-time read is a system call (~0.5–1 µs on a VM), < 0.5% of that.
const PERIOD_NS: u64 = 250_000;
/// At most this many stamps per worker; when full every other one goes and the period doubles.
const MAX_STAMPS: usize = 4096;

/// One worker's stamps: (wall ns since the phase's origin, the thread's CPU ns).
pub struct Stamps {
    origin: Instant,
    wall: Vec<u64>,
    cpu: Vec<u64>,
    period: u64,
    next: Instant,
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, which lives on this frame.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Stamps {
    /// The first stamp, taken by the worker itself; `origin` is the phase's common start.
    pub fn begin(origin: Instant) -> Stamps {
        let mut s = Stamps { origin, wall: Vec::with_capacity(64), cpu: Vec::with_capacity(64), period: PERIOD_NS, next: origin };
        s.stamp(Instant::now());
        s
    }

    /// Called by the worker with a time it has read anyway; stamps when a period has passed.
    #[inline]
    pub fn tick(&mut self, now: Instant) {
        if now >= self.next {
            self.stamp(now);
        }
    }

    /// The last stamp, at the worker's end.
    pub fn end(&mut self) {
        self.stamp(Instant::now());
    }

    fn stamp(&mut self, now: Instant) {
        let wall = now.saturating_duration_since(self.origin).as_nanos() as u64;
        if self.wall.len() == MAX_STAMPS {
            // Keep stamps 0, 2, 4, …: the intervals merge and their sums stay exact.
            let keep: Vec<usize> = (0..self.wall.len()).step_by(2).collect();
            self.wall = keep.iter().map(|&i| self.wall[i]).collect();
            self.cpu = keep.iter().map(|&i| self.cpu[i]).collect();
            self.period *= 2;
        }
        self.wall.push(wall);
        self.cpu.push(thread_cpu_ns());
        self.next = now + std::time::Duration::from_nanos(self.period);
    }

    /// (first, last) stamp in ns since the origin.
    pub fn span(&self) -> Option<(u64, u64)> {
        Some((*self.wall.first()?, *self.wall.last()?))
    }

    #[cfg(test)]
    fn from_parts(wall: Vec<u64>, cpu: Vec<u64>) -> Stamps {
        let origin = Instant::now();
        Stamps { origin, wall, cpu, period: PERIOD_NS, next: origin }
    }
}

/// Percent of the workers' common span (first stamp of any → last stamp of any) during which every
/// worker was running; None without stamps.
pub fn corun_pct(workers: &[Stamps]) -> Option<f64> {
    let t0 = workers.iter().filter_map(|w| w.span()).map(|s| s.0).min()?;
    let t_end = workers.iter().filter_map(|w| w.span()).map(|s| s.1).max()?;
    Some(corun_between(workers, t0, t_end))
}

/// Percent of [t0, t_end] (ns since the common origin) during which every worker was running.
fn corun_between(workers: &[Stamps], t0: u64, t_end: u64) -> f64 {
    if t_end <= t0 || workers.is_empty() {
        return 0.0;
    }
    let span_ns = t_end - t0;
    // (time, worker, running fraction from then on); before its first stamp a worker has not started.
    let mut events: Vec<(u64, usize, f64)> = Vec::new();
    for (i, w) in workers.iter().enumerate() {
        for k in 0..w.wall.len() {
            let frac = match (w.wall.get(k + 1), w.cpu.get(k + 1)) {
                (Some(&w1), Some(&c1)) if w1 > w.wall[k] => {
                    let (wall, cpu) = ((w1 - w.wall[k]) as f64, c1.saturating_sub(w.cpu[k]) as f64);
                    (cpu / wall).min(1.0)
                }
                _ => 0.0,
            };
            events.push((w.wall[k], i, frac));
        }
    }
    events.sort_by_key(|e| e.0);
    let mut f = vec![0.0f64; workers.len()];
    let (mut zeros, mut logs, mut all, mut since) = (workers.len(), 0.0f64, 0.0f64, t0);
    for &(t, i, now) in events.iter().chain(std::iter::once(&(t_end, usize::MAX, 0.0))) {
        let t = t.clamp(t0, t_end);
        if t > since {
            if zeros == 0 {
                all += logs.exp() * (t - since) as f64;
            }
            since = t;
        }
        if i == usize::MAX {
            break;
        }
        if f[i] > 0.0 { logs -= f[i].ln() } else { zeros -= 1 }
        if now > 0.0 { logs += now.ln() } else { zeros += 1 }
        f[i] = now;
    }
    (100.0 * all / span_ns as f64).min(100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stamps every `step` µs over [from, to], running `share` of each interval except in [off_from, off_to).
    fn worker(from: u64, to: u64, step: u64, share: f64, off: (u64, u64)) -> Stamps {
        let (mut wall, mut cpu, mut c) = (vec![], vec![], 0.0);
        let mut t = from;
        while t <= to {
            wall.push(t * 1000);
            cpu.push((c * 1000.0) as u64);
            if !(t >= off.0 && t < off.1) {
                c += step as f64 * share;
            }
            t += step;
        }
        Stamps::from_parts(wall, cpu)
    }

    const NONE: (u64, u64) = (u64::MAX, u64::MAX);

    #[test]
    fn side_by_side_one_after_the_other_and_turns() {
        let pct = |w: &[Stamps]| corun_pct(w).unwrap();
        let both = [worker(0, 1000, 10, 1.0, NONE), worker(0, 1000, 10, 1.0, NONE)];
        assert!(pct(&both) > 99.9);
        let half = [worker(0, 1000, 10, 1.0, NONE), worker(0, 1000, 10, 1.0, (250, 750))];
        assert!((pct(&half) - 50.0).abs() < 0.1);
        let serial = [worker(0, 500, 10, 1.0, NONE), worker(0, 1000, 10, 1.0, (0, 500))];
        assert!(pct(&serial) < 0.01);
        let turns = [worker(0, 1000, 10, 0.5, NONE), worker(0, 1000, 10, 0.5, NONE)];
        assert!((pct(&turns) - 25.0).abs() < 0.1);
        // A worker that starts late: the span is the union of the workers' spans.
        let late = [worker(0, 1000, 10, 1.0, NONE), worker(500, 1000, 10, 1.0, NONE)];
        assert!((pct(&late) - 50.0).abs() < 0.1);
        assert_eq!(corun_pct(&[]), None);
    }

    #[test]
    fn stamps_stay_bounded_and_measure_this_thread() {
        let mut s = Stamps::begin(Instant::now());
        let t0 = Instant::now();
        while t0.elapsed().as_millis() < 30 {
            s.tick(Instant::now());
        }
        s.end();
        assert!(s.wall.len() > 10 && s.wall.len() <= MAX_STAMPS);
        // A spinning thread alone ran most of its span (a loaded CI host may take some of it).
        assert!(corun_pct(std::slice::from_ref(&s)).unwrap() > 5.0);
        for _ in 0..3 * MAX_STAMPS {
            s.stamp(Instant::now());
        }
        assert!(s.wall.len() <= MAX_STAMPS && s.period > PERIOD_NS);
    }
}
