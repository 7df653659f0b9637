//! Helpers shared by the integration tests (each test crate uses some of them).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

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
