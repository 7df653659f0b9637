//! The script API without Cassandra (issue 11 items 1 and 3): the README's API table against the
//! fixture script that calls each item, the fixture's offline half run for real, runtime errors with
//! file:line:column and function, and `runner erase` on a script without `erase`.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

const API: &str = "rust-runner/tests/fixtures/api/latte_api.rn";
const RUNTIME_ERROR: &str = "rust-runner/tests/fixtures/runtime_error.rn";

/// The folder `RUNNER_RESOURCES` names in the API runs: a resource found only through the variable.
/// Written once per test process and put in place by a rename: the tests run in parallel, and a rewrite
/// (truncate, then write) while another test's runner reads the file gave that runner "" (CI, stop 32).
pub fn env_resources() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("api-resources");
        std::fs::create_dir_all(&d).unwrap();
        let tmp = d.join(format!("env_resource.txt.{}", std::process::id()));
        std::fs::write(&tmp, "from the environment\n").unwrap();
        std::fs::rename(&tmp, d.join("env_resource.txt")).unwrap();
        d
    })
    .clone()
}

fn runner(args: &[&str]) -> Output {
    common::runner_with(&[("RUNNER_RESOURCES", env_resources().display().to_string())], args)
}

/// The rows of the README's "Script API vs Latte 0.29" table: (item, the code that calls it, status).
fn api_table() -> Vec<(String, Vec<String>, String)> {
    let readme = std::fs::read_to_string(root().join("rust-runner/README.md")).unwrap();
    let start = readme.find("### Script API vs Latte 0.29").expect("the README has the API table section");
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in readme[start..].lines().skip(1) {
        if line.starts_with('|') {
            in_table = true;
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            if cells.len() < 3 || cells[0] == "item" || cells[0].starts_with("---") {
                continue;
            }
            // Every `code` span of the second cell must appear in the script.
            // (A `|` inside a cell is written `\|` in Markdown.)
            let calls: Vec<String> = cells[1].split('`').skip(1).step_by(2).map(|c| c.replace("\\|", "|")).collect();
            rows.push((cells[0].to_string(), calls, cells[2].to_string()));
        } else if in_table {
            break;
        }
    }
    rows
}

#[test]
fn every_item_of_the_readme_table_is_called_by_the_fixture() {
    let script = std::fs::read_to_string(root().join(API)).unwrap();
    let rows = api_table();
    // 46 rows cover Latte 0.29's items and argument forms, 14 this runner's additions: fewer means some
    // went missing.
    assert!(rows.len() >= 60, "the API table has only {} rows", rows.len());
    for (item, calls, status) in &rows {
        assert!(!calls.is_empty(), "README API table: `{item}` names no call");
        assert!(
            ["same", "differs", "fixed", "added"].iter().any(|s| status.starts_with(s)),
            "README API table: `{item}` has status '{status}' (same / differs / fixed / added)"
        );
        for c in calls {
            assert!(script.contains(c.as_str()), "README API table: `{item}` says the fixture calls `{c}`, it does not");
        }
    }
}

#[test]
fn the_fixture_runs_every_offline_item_without_a_failed_assertion() {
    let _runners = common::shared();
    let out_path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("api-offline.json");
    let out = runner(&[
        "run", API, "-f", "offline", "-P", "cql=false", "-P", "n=7", "-P", "word=abc", "-P", "list=[1, 2]",
        "-d", "3", "-w", "0", "-c", "1", "--no-csv", "-o", out_path.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out_path).unwrap()).unwrap();
    assert_eq!(r["result"]["cycles"], 3);
    assert_eq!(r["result"]["errors"], 0, "{err}");

    // The same run with a parameter the script asserts otherwise: the failed assertion fails the cycle.
    let out = runner(&["run", API, "-f", "offline", "-P", "cql=false", "-P", "n=8", "-d", "1", "-w", "0", "--no-csv", "-q", "-o", out_path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("latte_api.rn:") && err.contains("assertion failed"), "{err}");
}

#[test]
fn runtime_errors_name_file_line_column_and_function() {
    let _runners = common::shared();
    let cases = [
        ("run", ":4:5: error: ", "(in fn third(xs))", Some(":9:5 (in fn run(ctx, i))")),
        ("missing_method", ":13:5: error: Missing instance function", "(in fn missing_method(ctx, i))", None),
        ("type_error", ":17:13: error: Unsupported binary operation", "(in fn type_error(ctx, i))", None),
    ];
    for (f, at, func, caller) in cases {
        let out = runner(&["run", RUNTIME_ERROR, "-f", f, "-d", "1", "-w", "0", "--no-csv", "-q", "-o", "/dev/null"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(&format!("runtime_error.rn{at}")), "{f}: want runtime_error.rn{at} in:\n{err}");
        assert!(err.contains(func), "{f}: want {func} in:\n{err}");
        if let Some(c) = caller {
            assert!(err.contains(&format!("called from {RUNTIME_ERROR}{c}")), "{f}: want the caller {c} in:\n{err}");
        }
    }
}

#[test]
fn erase_without_an_erase_function_is_bad_input() {
    let _runners = common::shared();
    let out = runner(&["erase", RUNTIME_ERROR, "--nodes", "127.0.0.1:1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("has no `erase` function"), "{err}");
    // --if-defined: nothing to do is a success (drivers call it on every script).
    let out = runner(&["erase", RUNTIME_ERROR, "--if-defined", "--nodes", "127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `-o /dev/null` (any file that is not a regular one) is written through, not renamed over: as root the
/// rename made /dev/null a regular file for the whole host (2026-11-28). A FIFO stands in for the device
/// (a failing test must not break the host): it is still a FIFO after the run and its reader got the report.
#[test]
fn an_output_that_is_not_a_regular_file_is_written_through() {
    use std::os::unix::fs::FileTypeExt;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fifo-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("report.json");
    let _ = std::fs::remove_file(&fifo);
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || tx.send(std::fs::read(&path)).ok());
    let out = runner(&["run", "workloads/empty.rn", "-d", "10", "-w", "0", "--no-csv", "-q", "-o", fifo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced by a file");
    let got = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("the FIFO's reader got nothing").unwrap();
    let r: serde_json::Value = serde_json::from_slice(&got).unwrap();
    assert_eq!(r["result"]["cycles"], 10);
    std::fs::remove_dir_all(&dir).ok();
}
