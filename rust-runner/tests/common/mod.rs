//! Helpers shared by the integration tests.

use std::process::Child;
use std::time::{Duration, Instant};

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
