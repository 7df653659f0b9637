//! Helpers shared by the integration tests' modules.

use std::path::Path;
use std::process::{Child, Command, Output};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

/// Held by every test that starts the runner: shared by most, taken alone by the few that must not run
/// beside another runner of this binary. As separate binaries (until the merge into one, see main.rs)
/// tests of different files never ran together; in one binary the harness runs them side by side, and
/// the alone ones would then see 2 cores shared with CPU-bound script loops, or share CPU 0:
/// - cassandra: its own JVM node (768 MiB heap, started within a bound) on fixed ports (19042, 17000,
///   17199), a 3-s freeze that must read as an outage of more than 10% of 7 s, and the errors and cycles
///   counted around it; minutes long, so it runs alone as it did as its own binary;
/// - interrupt: Ctrl-C 1.5 s after the start must find measured cycles;
/// - robustness's two workers taking turns on CPU 0, whose co-running estimate must stay low.
/// The tests inside one file ran side by side before too and still do. Poison-tolerant: a failed test
/// (a panic while holding the lock) must not fail the others.
static RUNNERS: RwLock<()> = RwLock::new(());

/// For a test that starts the runner and does not mind others doing so at the same time.
pub fn shared() -> RwLockReadGuard<'static, ()> {
    RUNNERS.read().unwrap_or_else(|e| e.into_inner())
}

/// For a test that must be the only one of this binary running the runner (see `RUNNERS`).
pub fn alone() -> RwLockWriteGuard<'static, ()> {
    RUNNERS.write().unwrap_or_else(|e| e.into_inner())
}

/// Runs the runner from the project root with `env` set (and no `$LAB_RAW`), echoing its stderr.
pub fn runner_with(env: &[(&str, String)], args: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(root)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env_remove("LAB_RAW")
        .args(args)
        .output()
        .expect("runner");
    eprintln!("$ runner {}\n{}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    out
}

/// Waits for `child` to exit; kills it and fails the test after `limit`. A liveness bound (a runner
/// that hangs fails), not a speed goal.
pub fn wait_bounded(child: &mut Child, limit: Duration, what: &str) {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
