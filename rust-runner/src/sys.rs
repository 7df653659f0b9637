//! Operating-system facts the runner needs: CPU lists, pinning, CPU time and peak RSS, Ctrl-C.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Result};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: the one thing a signal handler may safely do here.
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// The first SIGINT or SIGTERM asks the run to stop and save what it measured; the handler then
/// resets itself, so a second one ends the process at once.
pub fn stop_on_interrupt() {
    // SAFETY: a plain sigaction with a handler that only stores an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// Whether Ctrl-C (or SIGTERM) asked the run to stop.
#[inline]
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Parses a taskset/hwloc style CPU list ("0-3,8,10-11") keeping the given order.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse()?, b.trim().parse()?);
                if b < a {
                    bail!("bad CPU range '{part}'");
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| anyhow::anyhow!("bad CPU '{part}'"))?),
        }
    }
    if cpus.is_empty() {
        bail!("empty CPU list '{s}'");
    }
    Ok(cpus)
}

/// Binds the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET only writes inside it (cpu bounded below).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            bail!("CPU {cpu} is out of range");
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            bail!("cannot pin to CPU {cpu}: {}", std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPU the calling thread runs on now (-1 if the kernel does not say).
pub fn current_cpu() -> i32 {
    // SAFETY: no arguments, no memory touched.
    unsafe { libc::sched_getcpu() }
}

/// The NUMA node of the page holding `p` (get_mempolicy with MPOL_F_NODE | MPOL_F_ADDR), or -1 when the
/// kernel does not say (no NUMA support, a refused system call, a page not yet touched).
pub fn page_node(p: *const u8) -> i32 {
    const MPOL_F_NODE: libc::c_ulong = 1;
    const MPOL_F_ADDR: libc::c_ulong = 2;
    let mut node: libc::c_int = -1;
    // SAFETY: the kernel writes one int to `node`; a null nodemask with maxnode 0 is allowed, and `p`
    // is only looked up in the page tables, never dereferenced.
    let rc = unsafe {
        libc::syscall(libc::SYS_get_mempolicy, &mut node as *mut libc::c_int, std::ptr::null_mut::<libc::c_ulong>(),
                      0 as libc::c_ulong, p, MPOL_F_NODE | MPOL_F_ADDR)
    };
    if rc == 0 { node } else { -1 }
}

/// The node of this thread's heap: a page-sized block from the allocator (jemalloc serves it from the
/// arena this thread allocates from), written so that it has a page, then asked for its node.
pub fn heap_node() -> i32 {
    let mut b = vec![0u8; 4096];
    std::hint::black_box(&mut b[..]);
    page_node(b.as_ptr())
}

/// Process-wide resource use (all threads).
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    pub user_s: f64,
    pub system_s: f64,
    pub max_rss_bytes: u64,
}

impl Usage {
    pub fn now() -> Usage {
        // SAFETY: getrusage fills the struct we pass.
        let ru = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut ru);
            ru
        };
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        Usage {
            user_s: tv(ru.ru_utime),
            system_s: tv(ru.ru_stime),
            max_rss_bytes: ru.ru_maxrss as u64 * 1024, // Linux reports KiB
        }
    }

    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.system_s
    }
}

/// Parses "10s", "250ms", "2m", "1h", "1.5s" as a duration.
pub fn parse_duration(s: &str) -> Option<std::time::Duration> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.trim().parse().ok()?;
    let secs = match unit {
        "ns" => v * 1e-9,
        "us" => v * 1e-6,
        "ms" => v * 1e-3,
        "s" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return None,
    };
    // try_: a value past Duration's range (1e20s) is bad input, not a panic.
    if secs < 0.0 {
        return None;
    }
    std::time::Duration::try_from_secs_f64(secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8").unwrap(), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse_cpu_list("5,1").unwrap(), vec![5, 1]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("").is_err());
        assert!(parse_cpu_list("a").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("3s").unwrap().as_millis(), 3000);
        assert_eq!(parse_duration("250ms").unwrap().as_millis(), 250);
        assert_eq!(parse_duration("2m").unwrap().as_secs(), 120);
        assert!(parse_duration("10").is_none());
        assert!(parse_duration("3x").is_none());
        assert!(parse_duration("100000000000000000000s").is_none());
        assert!(parse_duration("-1s").is_none());
    }
}
