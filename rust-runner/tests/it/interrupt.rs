//! Ctrl-C during a run: the workers stop, the partial report is saved and marked, exit code 130.
//! Needs no Cassandra (the empty workload), so it runs with every `cargo test`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common;

#[test]
fn ctrl_c_saves_a_partial_report() {
    let _runners = common::alone();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("interrupted.json");
    let _ = std::fs::remove_file(&out);
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(root)
        .env_remove("LAB_RAW")
        .args(["run", "workloads/empty.rn", "-d", "120s", "-w", "0", "--no-csv", "-o"])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .expect("runner");
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signals our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    common::wait_bounded(&mut child, Duration::from_secs(60), "the runner did not stop after Ctrl-C");
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted: the partial report is in"), "{err}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).expect("partial report")).unwrap();
    assert_eq!(r["result"]["interrupted"], true);
    assert_eq!(r["result"]["partial"], true);
    assert_eq!(r["result"]["budget_breach"], serde_json::Value::Null);
    assert!(r["result"]["cycles"].as_u64().unwrap() > 0);
    assert!(r["result"]["elapsed_s"].as_f64().unwrap() < 100.0, "stopped early, not after its 120 s");
}
