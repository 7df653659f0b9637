//! Hostile input (issue 12, item 8): each case once hung, panicked or passed a failure off as a result.
//! None needs Cassandra: the CQL peer of the connect test is a real socket that never answers.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(root())
        .env_remove("LAB_RAW")
        .env_remove("RUNNER_NODES")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runner")
}

/// Runs the runner to its end, failing the test if it outlives `limit` (a liveness bound).
fn run_bounded(args: &[&str], limit: Duration) -> (Output, Duration) {
    let t0 = Instant::now();
    let mut child = spawn(args);
    common::wait_bounded(&mut child, limit, &format!("runner {args:?} did not end"));
    (child.wait_with_output().unwrap(), t0.elapsed())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn script(name: &str, text: &str) -> String {
    let p = tmp(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn a_huge_thread_count_is_bad_input() {
    let _runners = common::shared();
    let (o, _) = run_bounded(&["run", "workloads/empty.rn", "-t", "100000", "-d", "1000", "--no-csv", "-q"], Duration::from_secs(30));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--threads 100000"), "{err}");
}

#[test]
fn a_zero_sampling_period_is_bad_input() {
    let _runners = common::shared();
    let (o, _) = run_bounded(&["run", "workloads/empty.rn", "--sampling", "0s", "-d", "1s", "--no-csv", "-q"], Duration::from_secs(30));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--sampling"), "{err}");
}

/// Both ways: a program that never waits runs each call in place (exec::call::Calls::call_now), so one
/// call is in flight whatever `-c`; with "await" in a comment (the general path) the calls are
/// futures, and all four are in flight. Either way the loop keeps closing samples (every 250 ms) while
/// the calls compute, and drops them after the drain time.
#[test]
fn a_script_that_never_returns_still_ends_with_the_duration() {
    let _runners = common::shared();
    for (name, head, in_flight) in [("spin.rn", "", 1), ("spin-general.rn", "// await: the general path\n", 4)] {
        let s = script(name, &format!("{head}pub fn run(ctx, i) {{ loop {{}} }}\n"));
        let out = tmp(&format!("{name}.json"));
        let (o, took) = run_bounded(
            &["run", &s, "-d", "1s", "-w", "0", "-c", "4", "--sampling", "250ms", "--request-timeout", "1s", "--retries", "0", "--no-csv", "-o", out.to_str().unwrap()],
            Duration::from_secs(60),
        );
        let err = stderr(&o);
        // Nothing completed: that is a failure, not a throughput.
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains("no cycle succeeded"), "{name}: {err}");
        assert!(took < Duration::from_secs(20), "{name}: ended after {took:?}");
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(r["result"]["cycles"], 0, "{name}");
        assert_eq!(r["result"]["abandoned"], in_flight, "{name}");
        let samples = r["samples"].as_array().map_or(0, |a| a.len());
        assert!(samples >= 4, "{name}: {samples} samples over the 1 s span");
    }
}

#[test]
fn a_script_that_never_returns_stops_on_the_first_sigterm() {
    let _runners = common::shared();
    let s = script("spin-term.rn", "pub fn run(ctx, i) { loop {} }\n");
    let out = tmp("spin-term.json");
    let mut child = spawn(&["run", &s, "-d", "300s", "-w", "0", "-c", "2", "--no-csv", "-o", out.to_str().unwrap()]);
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signals our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    common::wait_bounded(&mut child, Duration::from_secs(20), "the spinning runner did not stop on SIGTERM");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(r["result"]["interrupted"], true);
}

#[test]
fn a_peer_that_never_speaks_cql_fails_within_the_connect_timeout() {
    let _runners = common::shared();
    // A real listening socket: the kernel accepts the TCP connection, nobody ever answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (o, took) = run_bounded(
        &["schema", "workloads/basic_write.rn", "--nodes", &addr, "--connect-timeout", "1s"],
        Duration::from_secs(60),
    );
    drop(listener);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot connect to Cassandra"), "{err}");
    assert!(took < Duration::from_secs(15), "took {took:?} with --connect-timeout 1s");
}

#[test]
fn a_workload_whose_every_cycle_fails_exits_1() {
    let _runners = common::shared();
    let s = script("fail.rn", "pub fn run(ctx, i) { Err(\"always\") }\n");
    let out = tmp("fail.json");
    let (o, _) = run_bounded(
        &["run", &s, "-d", "500", "-w", "0", "--max-errors", "100000", "--no-csv", "-o", out.to_str().unwrap()],
        Duration::from_secs(60),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("no cycle succeeded (500 failed"), "{err}");
    // What was measured is still saved.
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(r["result"]["errors"], 500);
}

/// Two workers pinned to one CPU take turns: at no moment do both run, so a "contention" figure from
/// them is not one. The runner must say so (corun_pct, %; the estimate for turns finer than its 250 µs
/// stamps is ~25%, for coarser ones ~0) rather than leave it to the reader.
#[test]
fn workers_that_take_turns_on_one_cpu_report_that_they_did_not_run_together() {
    let _runners = common::alone();
    let out = tmp("turns.json");
    let (o, _) = run_bounded(
        &["run", "workloads/empty.rn", "--cpus", "0,0", "-d", "1s", "-w", "100ms", "-q", "-o", out.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let csv = String::from_utf8_lossy(&o.stdout).into_owned();
    let corun: f64 = csv
        .lines()
        .find_map(|l| l.split_once(",corun_pct,").map(|(_, rest)| rest.split(',').next().unwrap().parse().unwrap()))
        .unwrap_or_else(|| panic!("no corun_pct row in\n{csv}"));
    assert!((0.0..60.0).contains(&corun), "two workers on one CPU ran together {corun}% of the time");
}

/// The script VM's budgets (issue 24, item 6), in the phase that ran before unbounded: each breach ends
/// the command with one line naming the phase and the budget, exit 1, not an abort or an OOM. The
/// budgets are set small so that each case takes well under a second of the budget itself.
#[test]
fn the_script_budgets_hold_in_every_phase() {
    let _runners = common::shared();
    let cases = [
        // (script, flags, phase, budget named)
        ("pub fn prepare(ctx) { loop {} }\npub fn run(ctx, i) {}\n", "--script-time=1s", "prepare:", "--script-time 1s"),
        ("fn f(n) { f(n + 1) }\npub fn prepare(ctx) { f(0) }\npub fn run(ctx, i) {}\n", "--script-depth=1000", "prepare:", "--script-depth 1000"),
        ("pub fn prepare(ctx) { let v = []; loop { v.push(\"xxxxxxxx\"); } }\npub fn run(ctx, i) {}\n", "--script-memory=16MiB", "prepare:", "--script-memory 16 MiB"),
        ("fn f(n) { f(n + 1) }\npub fn run(ctx, i) { f(0) }\n", "--script-depth=1000", "run:", "--script-depth 1000"),
        ("pub fn run(ctx, i) { let s = \"x\"; loop { s = s + s; } }\n", "--script-memory=16MiB", "run:", "--script-memory 16 MiB"),
        ("pub fn load(ctx, i) { loop {} }\npub fn run(ctx, i) {}\n", "--script-time=1s", "load:", "--script-time 1s"),
        ("pub fn schema(ctx) { loop {} }\n", "--script-time=1s", "schema:", "--script-time 1s"),
    ];
    for (n, (text, flag, phase, budget)) in cases.iter().enumerate() {
        let s = script(&format!("budget{n}.rn"), text);
        let cmd = if *phase == "load:" { "load" } else if *phase == "schema:" { "schema" } else { "run" };
        let mut args = vec![cmd, s.as_str(), *flag];
        if cmd != "schema" {
            args.extend(["-d", if cmd == "load" { "10" } else { "2s" }, "-w", "0", "-c", "2", "--no-csv", "-q", "-o"]);
        }
        let out = tmp(&format!("budget{n}.json"));
        if cmd != "schema" {
            args.push(out.to_str().unwrap());
        }
        let (o, _) = run_bounded(&args, Duration::from_secs(60));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "case {n} ({flag}): {err}");
        let line = err.lines().find(|l| l.starts_with("runner: ")).unwrap_or_else(|| panic!("case {n}: no runner: line in {err}"));
        assert!(line.contains(phase) && line.contains(budget), "case {n}: {line}");
        assert!(!err.contains("panicked") && !err.contains("overflow"), "case {n}: {err}");
    }
}

/// A worker keeps the VM of a call for the next one (exec::call::keep_vm), but never one whose stack a
/// call grew: kept, its room would stay charged to --script-memory and refuse later calls' values.
/// Even cycles grow the stack (3,000 nested calls of 8 arguments, completed in one poll: the path that
/// keeps stacks), odd ones build a 2 MiB string (3 MiB at its peak). Each fits the 3.5 MiB budget
/// alone (measured: ≤ 2 MiB and ≤ 3.2 MiB); with the grown stack (≥ 512 KiB) still charged the
/// string would not.
#[test]
fn a_grown_vm_stack_is_not_kept_charged_to_the_memory_budget() {
    let _runners = common::shared();
    let text = "fn deep(n, a, b, c, d, e, f, g) { if n == 0 { return 0; } deep(n - 1, a, b, c, d, e, f, g) }\n\
                pub fn run(ctx, i) {\n    if i % 2 == 0 { deep(3000, 1, 2, 3, 4, 5, 6, 7); } else { let s = \"x\"; for k in 0..21 { s = s + s; } }\n}\n";
    // Both ways: calls run in place, and (with "await" in a comment) calls as futures.
    runs_cleanly("grown-stack", text, &["--script-memory=3584KiB", "-t", "1", "-c", "1"], 20);
    runs_cleanly("grown-stack-general", &format!("// await: the general path\n{text}"), &["--script-memory=3584KiB", "-t", "1", "-c", "1"], 20);
}

/// 100,000 nested parentheses (or a 100,000-long operator chain) are refused before the compiler
/// recurses into them: file:line:column, exit 2, no stack overflow.
#[test]
fn deep_nesting_is_refused_before_the_compiler_overflows() {
    let _runners = common::shared();
    let deep = [
        format!("pub fn run(ctx, i) {{\n    let x = {}1{};\n}}\n", "(".repeat(100_000), ")".repeat(100_000)),
        format!("pub fn run(ctx, i) {{\n    let x = 1{};\n}}\n", "+1".repeat(100_000)),
        format!("pub fn run(ctx, i) {{\n    let x = {}true;\n}}\n", "!".repeat(100_000)),
    ];
    for (n, text) in deep.iter().enumerate() {
        let s = script(&format!("deep{n}.rn"), text);
        let (o, _) = run_bounded(&["run", &s, "-d", "1", "-w", "0", "--no-csv", "-q"], Duration::from_secs(60));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "case {n}: {err}");
        assert!(err.contains(&format!("deep{n}.rn:2:")) && err.contains("nested more than"), "case {n}: {err}");
    }
}

#[test]
fn a_folder_given_as_the_script_is_named_as_a_folder() {
    let _runners = common::shared();
    let (o, _) = run_bounded(&["run", ".", "-d", "1"], Duration::from_secs(30));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(".: is a folder, not a workload script"), "{err}");
}

/// A budget breached in the measured phase of `run` (issue 24): the cycles measured until then are
/// saved in the report, marked partial with the breach as the reason, and the command still fails
/// with its one line (now naming the report), exit 1. One worker, one call at a time: cycles 0..999
/// succeed, cycle 1000 breaches. A breach in the warmup saves an empty partial report the same way.
/// Each case runs twice: as written (its calls never wait, so the VM is resumed synchronously) and
/// with the word "await" in a comment (the general path: the VM's future polled), which must end alike.
#[test]
fn a_budget_breach_in_the_measured_phase_saves_a_partial_report() {
    let _runners = common::shared();
    let cases = [
        // (name, the breaching body, flag, budget named in the line, warmup)
        ("memory", "let s = \"x\"; loop { s = s + s; }", "--script-memory=16MiB", "memory budget (--script-memory 16 MiB)", "0"),
        ("time", "loop {}", "--script-time=1s", "more than its budget (--script-time 1s)", "0"),
        ("depth", "f(0)", "--script-depth=1000", "more than its budget (--script-depth 1000)", "0"),
        ("warmup", "loop {}", "--script-time=1s", "more than its budget (--script-time 1s)", "2000"),
    ];
    for ((name, body, flag, budget, warmup), head) in cases.iter().flat_map(|c| [(*c, ""), (*c, "// await: the general path\n")]) {
        let s = script(&format!("breach-{name}{}.rn", if head.is_empty() { "" } else { "-async" }), &format!("{head}fn f(n) {{ f(n + 1) }}\npub fn run(ctx, i) {{\n    if i >= 1000 {{ {body} }}\n}}\n"));
        let out = tmp(&format!("breach-{name}.json"));
        let _ = std::fs::remove_file(&out);
        let args = ["run", &s, flag, "-d", "60s", "-w", warmup, "-t", "1", "-c", "1", "--no-csv", "-q", "-o", out.to_str().unwrap()];
        let (o, took) = run_bounded(&args, Duration::from_secs(60));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("runner: ")).collect();
        assert_eq!(lines.len(), 1, "{name}: one line, in {err}");
        let phase = if name == "warmup" { "runner: run (warmup): " } else { "runner: run: " };
        assert!(lines[0].starts_with(phase) && lines[0].contains(budget), "{name}: {}", lines[0]);
        assert!(lines[0].ends_with(&format!("; the partial report is in {}", out.display())), "{name}: {}", lines[0]);
        assert!(took < Duration::from_secs(30), "{name}: ended after {took:?}, not at the breach");
        if name == "depth" {
            // The depth is checked every 10k instructions: at most 10k frames past the budget (the
            // 100k slice before let this recursion reach 24,999).
            let deep: u64 = lines[0].split("nested ").nth(1).and_then(|t| t.split(' ').next()).and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no depth in {}", lines[0]));
            assert!((1000..=11_000).contains(&deep), "stopped {deep} calls deep with --script-depth 1000");
        }
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).expect("the partial report")).expect("JSON");
        let res = &r["result"];
        assert_eq!(res["partial"], true, "{name}: {res}");
        assert_eq!(res["interrupted"], false, "{name}: {res}");
        let why = res["budget_breach"].as_str().unwrap_or_else(|| panic!("{name}: no budget_breach in {res}"));
        let why = why.lines().next().unwrap();
        assert!(lines[0].starts_with(&format!("runner: {why}; the partial report")), "{name}: the report's reason {why:?} is the line's");
        let measured = if name == "warmup" { 0 } else { 1000 };
        assert_eq!(res["cycles"], measured, "{name}: {res}");
        assert_eq!(res["errors"], 0, "{name}: {res}");
        assert_eq!(res["abandoned"], u64::from(name != "warmup"), "{name}: the breaching call, {res}");
        let periods: u64 = r["samples"].as_array().unwrap().iter().map(|p| p["cycles"].as_u64().unwrap()).sum();
        assert_eq!(periods, measured, "{name}: the periods hold the cycles");
    }
}

/// The exit of a runner that ended by itself (not by a signal such as the abort of a stack overflow).
fn exit_code(o: &Output, what: &str) -> i32 {
    o.status.code().unwrap_or_else(|| panic!("{what}: killed by a signal ({:?}): {}", o.status, stderr(o)))
}

/// Runs `text` (saved as `<name>.rn`) for exactly `cycles` cycles with `flags`, no warm-up, and checks
/// that the run ended cleanly: exit 0 by itself, and its report holds all `cycles` cycles, none
/// failed, not partial. The 120-s bound is a liveness bound, not a speed goal.
fn runs_cleanly(name: &str, text: &str, flags: &[&str], cycles: u64) {
    let s = script(&format!("{name}.rn"), text);
    let out = tmp(&format!("{name}.json"));
    let n = cycles.to_string();
    let mut args = vec!["run", s.as_str()];
    args.extend_from_slice(flags);
    args.extend(["-d", n.as_str(), "-w", "0", "--no-csv", "-q", "-o", out.to_str().unwrap()]);
    let (o, _) = run_bounded(&args, Duration::from_secs(120));
    assert_eq!(exit_code(&o, name), 0, "{name}: {}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let res = &r["result"];
    assert_eq!(res["cycles"], cycles, "{name}: {res}");
    assert_eq!(res["errors"], 0, "{name}: {res}");
    assert_eq!(res["partial"], false, "{name}: {res}");
}

/// Script calls that nest the worker's native stack (issue 24): Rune futures awaited inside each other
/// (direct, mutual, through a function value) and script functions called back by native ones
/// (`iter().map(f)`). Each once overflowed the stack and aborted the runner with no report; now each
/// ends the phase like any other budget breach: one line naming the limit, exit 1, the partial report
/// (cycles 0..999 succeed, cycle 1000 breaches). With the default 8 MiB stack budget the async
/// recursions run out of the 10k-instruction check slice first (the nested VM cannot be paused);
/// with --script-stack 1MiB (about 900 async levels) they reach the stack budget first.
#[test]
fn script_recursion_on_the_native_stack_ends_as_a_budget_breach() {
    let _runners = common::shared();
    const SLICE: &str = "ran 10000 instructions (the runner's check slice) inside another";
    const STACK: &str = "deeper than its native stack budget (--script-stack 1 MiB)";
    let direct = "async fn f(n) { f(n + 1).await }\npub async fn run(ctx, i) {\n    if i >= 1000 { f(0).await }\n}\n";
    let mutual = "async fn a(n) { b(n + 1).await }\nasync fn b(n) { a(n + 1).await }\npub async fn run(ctx, i) {\n    if i >= 1000 { a(0).await }\n}\n";
    let pointer = "async fn g(h, n) { h(h, n + 1).await }\npub async fn run(ctx, i) {\n    if i >= 1000 { g(g, 0).await }\n}\n";
    let native = "fn f(n) { [n].iter().map(|x| f(x + 1)).collect::<Vec>() }\npub fn run(ctx, i) {\n    if i >= 1000 { f(0) }\n}\n";
    // An awaited helper that computes more than a slice: it used to return `()` silently.
    let compute = "async fn sum() { let s = 0; for i in 0..100000 { s += i; } s }\npub async fn run(ctx, i) {\n    if i >= 1000 { sum().await }\n}\n";
    let cases = [
        ("direct", direct, None, SLICE),
        ("mutual", mutual, None, SLICE),
        ("pointer", pointer, None, SLICE),
        ("compute", compute, None, SLICE),
        ("direct-1mib", direct, Some("--script-stack=1MiB"), STACK),
        ("mutual-1mib", mutual, Some("--script-stack=1MiB"), STACK),
        ("pointer-1mib", pointer, Some("--script-stack=1MiB"), STACK),
        ("native", native, None, "deeper than its native stack budget (--script-stack 8 MiB)"),
        ("native-1mib", native, Some("--script-stack=1MiB"), STACK),
    ];
    for (name, text, flag, budget) in cases {
        let s = script(&format!("nest-{name}.rn"), text);
        let out = tmp(&format!("nest-{name}.json"));
        let _ = std::fs::remove_file(&out);
        let mut args = vec!["run", &s, "-d", "60s", "-w", "0", "-t", "1", "-c", "1", "--no-csv", "-q", "-o", out.to_str().unwrap()];
        args.extend(flag);
        let (o, took) = run_bounded(&args, Duration::from_secs(60));
        let err = stderr(&o);
        assert_eq!(exit_code(&o, name), 1, "{name}: {err}");
        assert!(!err.contains("panicked") && !err.contains("overflow"), "{name}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("runner: ")).collect();
        assert_eq!(lines.len(), 1, "{name}: one line, in {err}");
        assert!(lines[0].starts_with("runner: run: ") && lines[0].contains(budget), "{name}: {}", lines[0]);
        assert!(took < Duration::from_secs(30), "{name}: ended after {took:?}, not at the breach");
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).expect("the partial report")).expect("JSON");
        let res = &r["result"];
        assert_eq!(res["partial"], true, "{name}: {res}");
        assert!(res["budget_breach"].as_str().is_some_and(|b| b.contains(budget)), "{name}: {res}");
        assert_eq!(res["cycles"], 1000, "{name}: {res}");
        assert_eq!(res["errors"], 0, "{name}: {res}");
    }
}

/// The same nesting in the phases that run on the command's thread (prepare, schema) and on the
/// workers (load, the warmup): one line naming the phase and the limit, exit 1, no abort.
#[test]
fn script_recursion_on_the_native_stack_ends_every_phase_cleanly() {
    let _runners = common::shared();
    let rec = "async fn f(n) { f(n + 1).await }\n";
    let native = "fn g(n) { [n].iter().map(|x| g(x + 1)).collect::<Vec>() }\n";
    let cases = [
        ("prepare", format!("{rec}pub async fn prepare(ctx) {{ f(0).await }}\npub fn run(ctx, i) {{}}\n"), "--script-stack=1MiB", "prepare: "),
        ("prepare-native", format!("{native}pub fn prepare(ctx) {{ g(0) }}\npub fn run(ctx, i) {{}}\n"), "--script-stack=8MiB", "prepare: "),
        ("schema", format!("{rec}pub async fn schema(ctx) {{ f(0).await }}\n"), "--script-stack=1MiB", "schema: "),
        ("load", format!("{rec}pub async fn load(ctx, i) {{ f(0).await }}\npub fn run(ctx, i) {{}}\n"), "--script-stack=1MiB", "load: "),
        ("warmup", format!("{native}pub fn run(ctx, i) {{ g(0) }}\n"), "--script-stack=1MiB", "run (warmup): "),
    ];
    for (name, text, flag, phase) in cases {
        let s = script(&format!("nest-phase-{name}.rn"), &text);
        let out = tmp(&format!("nest-phase-{name}.json"));
        let mut args = vec![if name == "schema" { "schema" } else if name == "load" { "load" } else { "run" }, s.as_str(), flag];
        if name != "schema" {
            let warmup = if name == "warmup" { "10" } else { "0" };
            args.extend(["-d", "10", "-w", warmup, "-c", "1", "--no-csv", "-q", "-o", out.to_str().unwrap()]);
        }
        let (o, _) = run_bounded(&args, Duration::from_secs(60));
        let err = stderr(&o);
        assert_eq!(exit_code(&o, name), 1, "{name}: {err}");
        assert!(!err.contains("panicked") && !err.contains("overflow"), "{name}: {err}");
        let line = err.lines().find(|l| l.starts_with("runner: ")).unwrap_or_else(|| panic!("{name}: no runner: line in {err}"));
        let stack = flag.trim_start_matches("--script-stack=").replace("MiB", " MiB");
        assert!(line.contains(phase) && line.contains(&format!("native stack budget (--script-stack {stack})")), "{name}: {line}");
    }
}

/// Ordinary nesting stays legal: an async chain 100 deep (and 800 deep, near the 1 MiB budget) and a
/// native callback 100 deep return their value in every cycle.
#[test]
fn legal_nesting_still_runs() {
    let _runners = common::shared();
    let text = "async fn f(n, d) { if n >= d { return n; } f(n + 1, d).await }\n\
                fn g(n, d) { if n >= d { return n; } let v = [n].iter().map(|x| g(x + 1, d)).collect::<Vec>(); v[0] }\n\
                pub async fn run(ctx, i) {\n    let d = if i % 2 == 0 { 100 } else { 800 };\n    \
                if f(0, d).await != d { return Err(\"async\"); }\n    if g(0, 100) != 100 { return Err(\"native\"); }\n}\n";
    runs_cleanly("nest-legal", text, &["--script-stack=1MiB", "-t", "2", "-c", "2"], 200);
}

/// The watchdog (issue 24): a script function called back by a native one (`iter().map(f)`) runs
/// with no instruction budget (rune's running VM holds it), so `loop {}` there never comes back to
/// the per-slice check. The watchdog ends it after --script-time plus its grace (1 s here): one line
/// naming the budget and the native callback, exit 1. In the measured phase the other worker stops
/// and the partial report is saved (the stuck worker's calls since its last sample named as missing);
/// where nothing was measured (prepare, schema, the warmup) the line says there is no report.
/// Before, each of these ran until SIGKILL: the bound below is a liveness bound, not a speed goal.
#[test]
fn a_loop_in_a_native_callback_is_ended_by_the_watchdog() {
    let _runners = common::shared();
    const STUCK: &str = "[1].iter().map(|x| { loop {} }).collect::<Vec>()";
    let cases = [
        // (name, script, command, warmup, the line's start)
        ("prepare", format!("pub fn prepare(ctx) {{ {STUCK} }}\npub fn run(ctx, i) {{}}\n"), "run", "0", "runner: prepare: "),
        ("schema", format!("pub fn schema(ctx) {{ {STUCK} }}\n"), "schema", "", "runner: schema: "),
        ("warmup", format!("pub fn run(ctx, i) {{ {STUCK} }}\n"), "run", "100", "runner: run (warmup): "),
        ("run", format!("pub fn run(ctx, i) {{ if i == 3000 {{ {STUCK} }} }}\n"), "run", "0", "runner: run: "),
    ];
    for (name, text, cmd, warmup, start) in &cases {
        let s = script(&format!("stuck-{name}.rn"), text);
        let out = tmp(&format!("stuck-{name}.json"));
        let _ = std::fs::remove_file(&out);
        let mut args = vec![*cmd, s.as_str(), "--script-time=2s"];
        if *cmd == "run" {
            args.extend(["-t", "2", "-d", "30s", "-w", warmup, "--no-csv", "-q", "-o", out.to_str().unwrap()]);
        }
        let (o, _) = run_bounded(&args, Duration::from_secs(60));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        let line = err.lines().find(|l| l.starts_with("runner: ")).unwrap_or_else(|| panic!("{name}: no runner: line in {err}"));
        assert!(line.starts_with(start), "{name}: {line}");
        assert!(line.contains("more than its budget (--script-time 2s) plus the watchdog's grace of 1s"), "{name}: {line}");
        assert!(line.contains("called back by a native one"), "{name}: {line}");
        if *name != "run" {
            assert!(line.ends_with("; no report"), "{name}: {line}");
            assert!(!out.exists(), "{name}: a report was written");
            continue;
        }
        // Cycle 3000 is worker 0's: worker 1 ran on until the breach stopped it.
        assert!(line.contains("worker 0 could not be stopped") && line.contains("; the partial report is in"), "{line}");
        let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        let res = &report["result"];
        assert_eq!(res["partial"], true, "{res}");
        assert_eq!(res["interrupted"], false, "{res}");
        assert!(res["cycles"].as_u64().unwrap() >= 1500, "{res}");
        let why = res["budget_breach"].as_str().unwrap_or_else(|| panic!("no budget_breach in {res}"));
        assert!(why.starts_with("run: ") && why.contains("(--script-time 2s)") && why.contains("worker 0 could not be stopped"), "{why}");
    }
}

/// Ordinary long callbacks stay legal: one that computes ~3 s (20M additions inside `map`, longer
/// than the watchdog's grace alone) under a 60-s --script-time completes, exit 0. The budget is wide
/// because a loaded host may run the loop ten times slower.
#[test]
fn a_native_callback_computing_within_its_budget_is_not_stopped() {
    let _runners = common::shared();
    let text = "pub fn run(ctx, i) { [1].iter().map(|x| { let s = 0; for j in 0..20000000 { s += j; } s }).collect::<Vec>() }\n";
    runs_cleanly("callback-ok", text, &["--script-time=60s"], 1);
}
