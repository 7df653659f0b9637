//! Integration tests against a real Cassandra 5.0.9 that this test starts with cassandra/cassandra.sh
//! (on its own ports and work folder) and always stops, even when an assertion fails (Drop guard).
//! They run only with RUNNER_IT=1 (the `test-runner` recipe sets it): a plain `cargo test` stays offline.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common;
use crate::cql::{self, duration, sized, Row};

const PORT: u16 = 19042;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn work() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("it-cassandra")
}

fn cassandra(cmd: &str) -> Output {
    let lib = root().join(".work/cassandra/lib");
    let mut c = Command::new(root().join("cassandra/cassandra.sh"));
    c.arg(cmd)
        .env("CASSANDRA_PORT", PORT.to_string())
        .env("CASSANDRA_STORAGE_PORT", "17000")
        .env("CASSANDRA_JMX_PORT", "17199")
        .env("CASSANDRA_HEAP", "768M");
    // `jars` fills the lab's usual jar folder; the test's node runs from it with its own work folder.
    if cmd != "jars" {
        c.env("CASSANDRA_LIB", lib).env("CASSANDRA_WORK", work());
    }
    c.output().expect("cassandra.sh")
}

/// Stops the node when the test ends, however it ends.
struct Node;

impl Node {
    fn start() -> Node {
        // Fetch (or just verify) the locked jar set into the lab's usual folder, then run from it.
        let out = cassandra("jars");
        assert!(out.status.success(), "jars: {}", String::from_utf8_lossy(&out.stderr));
        let _ = cassandra("down");
        let _ = cassandra("wipe");
        let node = Node;
        let out = cassandra("up");
        assert!(out.status.success(), "cassandra up failed:\n{}", String::from_utf8_lossy(&out.stderr));
        node
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let out = cassandra("down");
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// The test node's PID, from `cassandra.sh status` ("running: PID 123, …").
fn node_pid() -> i32 {
    let out = cassandra("status");
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let pid = text.split("PID ").nth(1).and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next());
    pid.and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("no PID in `cassandra.sh status`: {text}"))
}

/// A process stopped with SIGSTOP until this is dropped (SIGCONT), however the test ends.
struct Frozen(i32);

impl Frozen {
    fn new(pid: i32) -> Frozen {
        // SAFETY: plain signals to the test's own Cassandra.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0, "SIGSTOP {pid}");
        Frozen(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

fn runner(args: &[&str]) -> Output {
    common::runner_with(&[("RUNNER_NODES", format!("127.0.0.1:{PORT}"))], args)
}

fn ok(args: &[&str]) -> Output {
    let out = runner(args);
    assert!(out.status.success(), "runner {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    out
}

fn report(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn query(text: &str) -> Vec<Row> {
    cql::query(PORT, text)
}

/// Column i's bytes as the node sent them (see cql.rs).
fn col(row: &Row, i: usize) -> Vec<u8> {
    row[i].clone().expect("non-null column")
}

#[test]
fn against_real_cassandra() {
    if std::env::var("RUNNER_IT").as_deref() != Ok("1") {
        eprintln!("skipped: set RUNNER_IT=1 (or run `just test-runner`) to test against a real Cassandra");
        return;
    }
    // Alone for its whole length (common::RUNNERS): its node's timing windows, its ports.
    let _runners = common::alone();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("it-reports");
    std::fs::create_dir_all(&tmp).unwrap();
    let rep = |name: &str| tmp.join(name).to_string_lossy().to_string();

    // An unreachable host first (nothing listens on port 1): a clear message, exit 1, no panic.
    let out = runner(&["run", "workloads/basic_write.rn", "--nodes", "127.0.0.1:1", "--connect-timeout", "2s", "-d", "1s"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot connect to Cassandra at 127.0.0.1:1"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    // A broken script: file:line:column and exit 2, before any connection is tried.
    let broken = tmp.join("broken.rn");
    std::fs::write(&broken, "pub async fn run(ctx, i) {\n    ctx.execute(\"x\").await?\n    let = 1;\n}\n").unwrap();
    let out = runner(&["run", broken.to_str().unwrap(), "-d", "1s"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken.rn:3:"), "no file:line for the broken script");

    let _node = Node::start();

    // schema → load → the rows are really there. 6000 rows: more than one page (5000) for the paging check.
    ok(&["schema", "workloads/basic_write.rn"]);
    let out = ok(&["load", "workloads/basic_write.rn", "-P", "rows=6000", "--threads", "2", "-o", &rep("load.json")]);
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(csv.starts_with("variant,metric,value,unit\n"), "{csv}");
    assert!(csv.contains("per-thread,cycles,6000,count"), "{csv}");
    let r = report(&tmp.join("load.json"));
    assert_eq!(r["result"]["errors"], 0);
    assert_eq!(r["result"]["requests"], 6000);
    let rows = query("SELECT COUNT(*) FROM lab.basic");
    assert_eq!(col(&rows[0], 0), 6000i64.to_be_bytes());

    // The script API's Cassandra half (README table): statements, argument forms, rows, CassError, and
    // paging (every one of the 6000 rows, over two pages). Zero failed assertions.
    let api = "rust-runner/tests/fixtures/api/latte_api.rn";
    ok(&["schema", api]);
    ok(&["run", api, "-f", "online", "-d", "50", "-w", "0", "-c", "4", "-o", &rep("api-online.json")]);
    let r = report(&tmp.join("api-online.json"));
    assert_eq!((r["result"]["cycles"].as_u64(), r["result"]["errors"].as_u64()), (Some(50), Some(0)));
    assert_eq!(r["result"]["rows"], 150, "three SELECTs of one row per cycle");
    ok(&["run", api, "-f", "paging", "-P", "basic_rows=6000", "-d", "2", "-w", "0", "-c", "1", "-o", &rep("api-paging.json")]);
    let r = report(&tmp.join("api-paging.json"));
    assert_eq!(r["result"]["errors"], 0);
    assert_eq!(r["result"]["rows"], 12000);
    assert_eq!(r["result"]["requests"], 4, "two pages per SELECT");
    // runner erase: the script's erase() empties its table.
    assert!(!query("SELECT id FROM lab_api.kv").is_empty());
    ok(&["erase", api]);
    assert!(query("SELECT id FROM lab_api.kv").is_empty(), "erase left rows");
    let rows = query("SELECT v FROM lab.basic WHERE id = 17");
    let text = String::from_utf8(col(&rows[0], 0)).expect("text is UTF-8");
    assert_eq!(text.chars().count(), 16, "latte::text(i, 16)");

    // run: point reads by named bind markers return the loaded rows.
    ok(&["run", "workloads/basic_read.rn", "-P", "rows=3000", "-d", "2000", "-w", "0", "-o", &rep("read.json")]);
    let r = report(&tmp.join("read.json"));
    assert_eq!(r["result"]["cycles"], 2000);
    assert_eq!(r["result"]["errors"], 0);
    assert_eq!(r["result"]["rows"], 2000, "every read must find its row");

    // Every Cassandra 5 type, bound positionally (load) and by name (run); counters too.
    let types = "rust-runner/tests/fixtures/types.rn";
    ok(&["schema", types]);
    ok(&["load", types, "-P", "rows=5", "-o", &rep("types-load.json")]);
    ok(&["run", types, "-d", "5", "-w", "0", "-o", &rep("types-run.json")]);
    // …and every type read back into Rune values, asserted in the script (a failed assertion fails the cycle).
    ok(&["run", types, "-f", "check", "-P", "rows=5", "-d", "5", "-w", "0", "-c", "1", "-o", &rep("types-check.json")]);
    let r = report(&tmp.join("types-check.json"));
    assert_eq!((r["result"]["cycles"].as_u64(), r["result"]["errors"].as_u64()), (Some(5), Some(0)));
    let rows = query("SELECT i, de, vi, du, tp, v, ad, m, d, tm, ip, si FROM lab_it.types WHERE id = 3");
    let row = &rows[0];
    // Each cell against CQL's serialization of the value types.rn binds (protocol v4, section 6).
    assert_eq!(col(row, 0), 42i32.to_be_bytes(), "int");
    assert_eq!(col(row, 1), [0, 0, 0, 3, 0x30, 0x39], "decimal 12.345: scale 3, unscaled 12345");
    assert_eq!(col(row, 2).len(), 13, "varint: 13 bytes");
    assert_eq!(duration(&col(row, 3)), (0, 0, 5_400_000_000_000), "duration 1h30m");
    assert_eq!(col(row, 4), [sized(&5i32.to_be_bytes()), sized(b"five")].concat(), "tuple (5, 'five')");
    assert_eq!(col(row, 5), [0.5f32, 1.5, 2.5].map(f32::to_be_bytes).concat(), "vector<float, 3>");
    assert_eq!(col(row, 6), [sized(b"Main"), sized(&4i32.to_be_bytes())].concat(), "addr {{street: 'Main', no: 4}}");
    assert_eq!(col(row, 7), [&1i32.to_be_bytes()[..], &sized(b"k"), &sized(&1i32.to_be_bytes())].concat(), "map {{'k': 1}}");
    assert_eq!(col(row, 8), ((1u32 << 31) + 19782).to_be_bytes(), "date: days since the epoch, centred on 2^31");
    assert_eq!(col(row, 9), 3_723_500_000_000i64.to_be_bytes(), "time: nanoseconds since midnight");
    assert_eq!(col(row, 10), [127, 0, 0, 1], "inet 127.0.0.1");
    assert_eq!(col(row, 11), 7i16.to_be_bytes(), "smallint");
    let rows = query("SELECT t, i, si FROM lab_it.types WHERE id = 1004");
    assert_eq!(rows[0], vec![Some(b"named".to_vec()), Some(4i32.to_be_bytes().to_vec()), Some(4i16.to_be_bytes().to_vec())]);
    let rows = query("SELECT c FROM lab_it.counters WHERE id = 2");
    assert_eq!(col(&rows[0], 0), 2i64.to_be_bytes(), "counter");

    // Failing cycles are counted, the first few printed, and the run stops after --max-errors.
    let bad = tmp.join("bad.rn");
    std::fs::write(&bad, "pub async fn run(ctx, i) {\n    ctx.execute(\"SELECT * FROM lab.no_such_table\").await?;\n}\n").unwrap();
    let out = runner(&["run", bad.to_str().unwrap(), "-d", "100", "-w", "0", "--max-errors", "5", "-c", "1", "-o", &rep("bad.json")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error in cycle") && err.contains("no_such_table"), "{err}");
    let r = report(&tmp.join("bad.json"));
    assert!(r["result"]["errors"].as_u64().unwrap() >= 6);
    assert!(r["result"]["cycles"].as_u64().unwrap() < 100);

    // show / list / hdr on the saved reports.
    ok(&["show", &rep("read.json"), "--baseline", &rep("read.json")]);
    let out = ok(&["list", tmp.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("basic_read.rn"));
    let out = ok(&["hdr", &rep("read.json")]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Tag=cycle"));

    // A node that stops answering (its JVM frozen with SIGSTOP for 3 s): the requests in flight fail
    // after --request-timeout (the runner's own deadline queue, scripting/deadline.rs), are counted
    // and printed, and the run goes on once the node answers again; but ~3 s of 7 without an answer is
    // more than --max-outage (10%), so the run fails (exit 1, saying when) instead of passing a
    // throughput several times too low for the server's (issue 24, item 13). Its report is still saved.
    let pid = node_pid();
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(root())
        .env("RUNNER_NODES", format!("127.0.0.1:{PORT}"))
        .env_remove("LAB_RAW")
        .args(["run", "workloads/basic_read.rn", "-P", "rows=3000", "-d", "7s", "-w", "0", "-c", "4"])
        .args(["--request-timeout", "1s", "--retries", "0", "--max-errors", "1000000000", "-o", &rep("frozen.json")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runner");
    std::thread::sleep(Duration::from_secs(2));
    {
        let _frozen = Frozen::new(pid);
        std::thread::sleep(Duration::from_secs(3));
    }
    common::wait_bounded(&mut child, Duration::from_secs(60), "the runner did not end after its node was frozen");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("$ runner run (node frozen from 2 s to 5 s)\n{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no response within --request-timeout 1s"), "{err}");
    assert!(err.contains("Cassandra stopped answering for") && err.contains("--max-outage 10%"), "{err}");
    let r = report(&tmp.join("frozen.json"));
    let errors = r["result"]["errors"].as_u64().unwrap();
    assert!((4..=24).contains(&errors), "the 4 requests in flight time out once a second while frozen: {errors}");
    assert!(r["result"]["cycles"].as_u64().unwrap() > 10 * errors, "reads before and after the freeze succeeded");
    assert_eq!(r["result"]["abandoned"], 0);

    // The node killed mid-run (SIGKILL, as the OOM killer does): failed cycles are counted and the first
    // printed, the run ends by itself with its report, no panic, and fails for the outage (exit 1).
    // Last, as it takes the node away (the Drop guard's `down` then finds it dead).
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(root())
        .env("RUNNER_NODES", format!("127.0.0.1:{PORT}"))
        .env_remove("LAB_RAW")
        .args(["run", "workloads/basic_read.rn", "-P", "rows=3000", "-d", "6s", "-w", "0", "-c", "4"])
        .args(["--request-timeout", "1s", "--retries", "1", "--retry-delay", "50ms"])
        .args(["--max-errors", "1000000000", "-o", &rep("lost.json")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runner");
    std::thread::sleep(Duration::from_secs(2));
    let pid = node_pid();
    // SAFETY: a plain signal to the test's own Cassandra.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0, "SIGKILL {pid}");
    common::wait_bounded(&mut child, Duration::from_secs(120), "the runner did not end after its node was killed");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("$ runner run (node killed at 2 s)\n{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Cassandra stopped answering for"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("error in cycle"), "the first failed cycles are printed: {err}");
    let r = report(&tmp.join("lost.json"));
    assert!(r["result"]["cycles"].as_u64().unwrap() > r["result"]["errors"].as_u64().unwrap(), "reads before the loss succeeded");
    assert!(r["result"]["errors"].as_u64().unwrap() > 0, "the reads after the loss are counted as errors");
}
