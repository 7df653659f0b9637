//! `runner schema` / `runner erase`: one call of the script's function of that name.
//! `runner load` / `runner run`: plan the phase from the flags, connect (and run the script's
//! `prepare`), measure (each worker warms up, then measures: see `exec`), save the report.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use crate::config::{cql_config, parse_params, RunArgs, ScriptArgs, MAX_PERIODS, MAX_THREADS};
use crate::error::{failed, input, Fail};
use crate::exec::{self, FnMix, PhaseSpec, Placement, Span};
use crate::report::{self, Collector, Report, RunResult, Throughput};
use crate::scripting::context::{Context, ContextSeed};
use crate::scripting::Program;
use crate::stats::Mean;
use crate::sys;

pub fn cmd_run(a: &RunArgs, command: &'static str) -> Result<(), Fail> {
    let (program, params) = compile(&a.script)?;
    let specs = functions(a, command, &program)?;
    let (threads, pinned) = placement(a)?;
    let (seed, load_count) = connect(a, &program, command)?;
    if command == "load" && a.duration.is_none() && load_count <= 0 {
        // Latte's load does the same: prepare, erase, then zero cycles is a success.
        eprintln!("nothing to load: the script's prepare() leaves ctx.load_cycle_count at 0");
        return Ok(());
    }
    let (spec, span, warmup, sampling) = phase(a, command, &specs, load_count)?;
    let placement = Placement { threads, cpus: pinned.clone() };
    let (collector, result) = measure(a, &program, &seed, &spec, &placement)?;
    save(a, command, SaveInput { params, specs, threads, pinned, span, warmup, sampling, seed, collector, result })
}

/// The functions to call and their weights (`-f name:weight`; `load` for the load command).
fn functions(a: &RunArgs, command: &str, program: &Program) -> Result<Vec<(String, u64)>, Fail> {
    let sa = &a.script;
    let mut specs = Vec::new();
    if command == "load" {
        specs.push(("load".to_string(), 1));
    } else if a.functions.is_empty() {
        specs.push(("run".to_string(), 1));
    }
    if command == "run" {
        for f in &a.functions {
            let (name, w) = match f.split_once(':') {
                Some((n, w)) => (n, w.parse::<u64>().map_err(|_| input(format!("-f {f}: weight must be a whole number")))?),
                None => (f.as_str(), 1),
            };
            if w > 0 {
                specs.push((name.to_string(), w));
            }
        }
    }
    for (name, _) in &specs {
        if !program.has_function(name) {
            return Err(input(format!("{} has no function `{name}`", sa.script.display())));
        }
    }
    if specs.is_empty() {
        return Err(input("every -f function has weight 0"));
    }

    Ok(specs)
}

/// Workers and where they run: one pinned worker per --cpus entry, or unbound workers.
fn placement(a: &RunArgs) -> Result<(usize, Option<Vec<usize>>), Fail> {
    let cpus = a.cpus.as_deref().map(sys::parse_cpu_list).transpose().map_err(|e| input(format!("--cpus: {e}")))?;
    let threads = a.threads.or(cpus.as_ref().map(Vec::len)).unwrap_or(1);
    if threads == 0 {
        return Err(input("--threads must be at least 1"));
    }
    if threads > MAX_THREADS {
        return Err(input(format!(
            "--threads {threads}: at most {MAX_THREADS} workers (each is an OS thread with its own runtime and Cassandra session)"
        )));
    }
    let pinned = match (&cpus, a.pin) {
        (Some(list), true) => {
            if list.len() != threads {
                return Err(input(format!("--threads {threads} but --cpus lists {} CPUs (one worker per CPU)", list.len())));
            }
            Some(list.clone())
        }
        _ => None,
    };
    if a.concurrency == 0 {
        return Err(input("--concurrency must be at least 1"));
    }
    if let Some(r) = a.rate {
        if !(r > 0.0) {
            return Err(input("--rate must be positive"));
        }
    }

    Ok((threads, pinned))
}

/// Runs the script's `prepare` on the main thread (connecting if it uses CQL): what every worker's
/// context is then built from. `load` then runs the script's `erase` when it has one, as Latte's does
/// (prepare, erase, load), so that a load starts from an empty table.
fn connect(a: &RunArgs, program: &Program, command: &str) -> Result<(ContextSeed, i64), Fail> {
    let cfg = Arc::new(cql_config(&a.script)?);
    let rt = runtime()?;
    let ctx_value = rune::to_value(Context::new(cfg)).map_err(failed)?;
    if program.has_function("prepare") {
        exec::call_once(&rt, &program, &ctx_value, "prepare", &a.script.budgets()).map_err(|e| failed(format!("{e:#}")))?;
    }
    if command == "load" && program.has_function("erase") {
        exec::call_once(&rt, &program, &ctx_value, "erase", &a.script.budgets()).map_err(|e| failed(format!("{e:#}")))?;
        if !a.quiet {
            eprintln!("erase: done (before loading, as Latte's load)");
        }
    }
    let (seed, load_count) = {
        let ctx = ctx_value.borrow_ref::<Context>().map_err(failed)?;
        (ctx.seed().map_err(failed)?, ctx.load_cycle_count)
    };
    Ok((seed, load_count))
}

/// The measured span, the warmup and the sampling period from the flags and the script's load count.
fn phase(a: &RunArgs, command: &str, specs: &[(String, u64)], load_count: i64) -> Result<(PhaseSpec, Span, Option<Span>, Duration), Fail> {
    let sa = &a.script;
    let span = match (command, a.duration) {
        (_, Some(d)) => d,
        ("load", None) => {
            if load_count <= 0 {
                return Err(input("nothing to load: the script's prepare() leaves ctx.load_cycle_count at 0"));
            }
            Span::Cycles(load_count as u64)
        }
        _ => Span::Time(Duration::from_secs(60)),
    };
    let warmup = match (command, a.warmup) {
        (_, Some(Span::Cycles(0))) => None,
        (_, Some(w)) => Some(w),
        ("load", None) => None,
        _ => Some(Span::Time(Duration::from_secs(1))),
    };
    // At least ~10 periods in short timed runs, so the error bar has something to work with.
    let sampling = a.sampling.unwrap_or(match span {
        Span::Time(d) if d < Duration::from_secs(10) => (d / 10).max(Duration::from_millis(10)),
        _ => Duration::from_secs(1),
    });
    if let Span::Time(d) = span {
        if d.as_nanos() / sampling.as_nanos().max(1) > MAX_PERIODS {
            return Err(input(format!("--sampling {sampling:?} over {d:?} makes more than {MAX_PERIODS} periods")));
        }
    }
    let spec = PhaseSpec {
        phase: if command == "load" { "load" } else { "run" },
        budgets: sa.budgets(),
        functions: FnMix::new(&specs),
        span,
        warmup,
        rate: a.rate,
        concurrency: a.concurrency,
        sampling,
        max_errors: a.max_errors,
        // A call still running this long after the phase ended is abandoned (a request times out before).
        drain: sa.request_timeout * (sa.retries + 1) + Duration::from_secs(1),
    };
    Ok((spec, span, warmup, sampling))
}

/// Runs the phase on the workers (each warms up, then measures) and gathers their samples.
fn measure(a: &RunArgs, program: &Program, seed: &ContextSeed, spec: &PhaseSpec, placement: &Placement) -> Result<(Collector, RunResult), Fail> {
    // Ctrl-C from here on stops the workers and saves what was measured (a second one kills).
    sys::stop_on_interrupt();
    let mut collector = Collector::new(placement.threads, spec.sampling, a.rate.is_some());
    let outcome = exec::run_phase(program, a.program_sharing, seed, spec, placement, |w, s| collector.add(w, s))
        .map_err(|e| failed(format!("{e:#}")))?;
    collector.finish(outcome.elapsed);
    if let Ok(raw) = std::env::var("LAB_RAW") {
        let variant = a.variant.clone().unwrap_or_else(|| a.program_sharing.variant().into());
        write_ran_on(std::path::Path::new(&raw), &variant, a.cpus.as_deref().unwrap_or(""), &outcome.placed)
            .map_err(|e| failed(format!("{raw}/ran-on.csv: {e}")))?;
    }

    let elapsed_s = outcome.elapsed.as_secs_f64().max(1e-9);
    let per_sample = Mean::of(&collector.throughputs());
    let result = RunResult {
        elapsed_s,
        cycles: collector.cycles,
        errors: collector.errors,
        abandoned: collector.abandoned,
        calls_per_s: Throughput { value: collector.cycles as f64 / elapsed_s, ci95: per_sample.ci95(), per_sample },
        requests: collector.requests,
        requests_per_s: collector.requests as f64 / elapsed_s,
        request_errors: collector.request_errors,
        retries: collector.retries,
        rows: collector.rows_read,
        latency_us: report::Percentiles::of(&collector.cycle_ns),
        request_latency_us: report::Percentiles::of(&collector.request_ns),
        service_time_us: collector.service_ns.as_ref().map(report::Percentiles::of),
        cpu_s: outcome.cpu_s,
        user_s: outcome.user_s,
        system_s: outcome.system_s,
        client_cpu_per_op_us: if collector.cycles > 0 { outcome.cpu_s / collector.cycles as f64 * 1e6 } else { f64::NAN },
        peak_rss_bytes: outcome.max_rss_bytes,
        corun_pct: outcome.corun_pct,
        stopped_on_errors: outcome.stopped_on_errors,
        interrupted: sys::interrupted(),
        partial: sys::interrupted() || outcome.breach.is_some() || outcome.stopped_on_errors,
        budget_breach: outcome.breach,
    };
    Ok((collector, result))
}

/// Appends a line per worker to DIR/ran-on.csv (docs/instruments.md): the CPU it ran on when its window
/// began and ended, and the node of its heap (sys::heap_node); the runner binds no memory (mem_want -1),
/// so the engine's guard checks the node against the point's membind.
fn write_ran_on(dir: &std::path::Path, variant: &str, cpus: &str, placed: &[exec::Placed]) -> std::io::Result<()> {
    use std::io::Write;
    let path = dir.join("ran-on.csv");
    let new = std::fs::metadata(&path).map(|m| m.len() == 0).unwrap_or(true);
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
    let mut out = String::new();
    if new {
        out.push_str("probe,variant,cpus,thread,pinned_to,first_cpu,last_cpu,mem_node,mem_want\n");
    }
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let mut placed = placed.to_vec();
    placed.sort_by_key(|p| p.worker);
    for p in placed {
        out.push_str(&format!("runner,{},{},{},{},{},{},{},-1\n", quote(variant), quote(cpus), p.worker, p.pinned_to,
                              p.first_cpu, p.last_cpu, p.heap_node));
    }
    f.write_all(out.as_bytes())
}

struct SaveInput {
    params: HashMap<String, String>,
    specs: Vec<(String, u64)>,
    threads: usize,
    pinned: Option<Vec<usize>>,
    span: Span,
    warmup: Option<Span>,
    sampling: Duration,
    seed: ContextSeed,
    collector: Collector,
    result: RunResult,
}

/// Builds the report, saves it, prints the summary and the CSV, and turns the outcome into an exit code.
fn save(a: &RunArgs, command: &str, i: SaveInput) -> Result<(), Fail> {
    let sa = &a.script;
    let SaveInput { params, specs, threads, pinned, span, warmup, sampling, seed, mut collector, result } = i;
    let span_text = |s: Option<Span>| match s {
        Some(Span::Cycles(n)) => format!("{n} cycles"),
        Some(Span::Time(d)) => format!("{:?}", d),
        None => "none".into(),
    };
    let report = Report {
        runner_version: env!("CARGO_PKG_VERSION").into(),
        command: command.into(),
        workload: sa.script.display().to_string(),
        functions: specs.iter().map(|(n, w)| format!("{n}:{w}")).collect(),
        params: params.into_iter().collect::<BTreeMap<_, _>>(),
        tags: a.tags.clone(),
        timestamp: report::chrono_like_now(),
        unix_time: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        threads,
        cpus: pinned.map(|_| a.cpus.clone().unwrap_or_default()),
        sharing: a.program_sharing.variant().into(),
        variant: a.variant.clone().unwrap_or_else(|| a.program_sharing.variant().into()),
        concurrency: a.concurrency,
        rate: a.rate,
        duration: span_text(Some(span)),
        warmup: span_text(warmup),
        sampling_s: sampling.as_secs_f64(),
        nodes: seed.cfg.nodes.clone(),
        result,
        samples: std::mem::take(&mut collector.rows),
    };
    let path = a.output.clone().unwrap_or_else(|| report::default_report_path(&sa.script, command));
    report.save(&path).map_err(|e| failed(format!("{e:#}")))?;
    if !a.quiet {
        eprint!("{}", report.summary());
        eprintln!("{:>22}  {}", "report", path.display());
    }
    if !a.no_csv {
        let stdout = std::io::stdout();
        report.write_csv(&mut stdout.lock()).map_err(failed)?;
    }
    if let Some(breach) = &report.result.budget_breach {
        // The same line as a breach in schema/prepare/erase, plus where the partial report is (before
        // the source line a breach at a script's line shows under it).
        let (line, rest) = breach.split_once('\n').map_or((breach.as_str(), None), |(l, r)| (l, Some(r)));
        let rest = rest.map(|r| format!("\n{r}")).unwrap_or_default();
        return Err(failed(format!("{line}; the partial report is in {}{rest}", path.display())));
    }
    if report.result.interrupted {
        // 130: the shell's code for a run ended by Ctrl-C; the sweep engine counts it as not measured
        return Err(Fail(130, format!("interrupted: the partial report is in {}", path.display())));
    }
    if let Some(msg) = outage(&report.samples, report.result.elapsed_s, a.max_outage) {
        return Err(failed(format!("{msg}; the report is in {}", path.display())));
    }
    if report.result.stopped_on_errors {
        return Err(failed(format!("stopped after more than {} errors", a.max_errors)));
    }
    if report.result.cycles == report.result.errors {
        // Nothing measured succeeded: a throughput of failures must not pass for a result.
        return Err(failed(format!(
            "no cycle succeeded ({} failed, {} abandoned unfinished); the report is in {}",
            report.result.errors, report.result.abandoned, path.display()
        )));
    }
    Ok(())
}

/// Whether Cassandra stopped answering for more than `max_pct` % of the window: a period in which
/// requests ended but fewer than 1% of the best period's succeeded is down (a frozen node answers
/// nothing, or at its thaw only the few requests it had queued), and so is an idle period (nothing
/// finished) next to one (a frozen node's requests end only at their timeout). Workloads without
/// requests are never down.
/// The message says how long and when, from the per-period samples.
fn outage(samples: &[report::SampleRow], elapsed_s: f64, max_pct: f64) -> Option<String> {
    if samples.iter().all(|s| s.requests == 0) {
        return None;
    }
    let ok = |s: &report::SampleRow| s.requests.saturating_sub(s.request_errors);
    let best = samples.iter().map(ok).max().unwrap_or(0);
    let failed = |s: &report::SampleRow| s.requests > 0 && ok(s) * 100 < best;
    let idle = |s: &report::SampleRow| s.requests == 0 && s.cycles == 0;
    let mut down: Vec<bool> = samples.iter().map(failed).collect();
    // Spread over idle neighbours, both ways, until nothing changes (runs of idle periods).
    loop {
        let mut changed = false;
        for i in 0..samples.len() {
            if !down[i] && idle(&samples[i]) && ((i > 0 && down[i - 1]) || (i + 1 < samples.len() && down[i + 1])) {
                down[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let periods: Vec<&report::SampleRow> = samples.iter().zip(&down).filter(|(_, d)| **d).map(|(s, _)| s).collect();
    let lost: f64 = periods.iter().map(|s| s.duration_s).sum();
    let pct = 100.0 * lost / elapsed_s.max(1e-9);
    if periods.is_empty() || pct <= max_pct {
        return None;
    }
    let (first, last) = (periods[0], periods[periods.len() - 1]);
    Some(format!(
        "Cassandra stopped answering for {lost:.1} s of the {elapsed_s:.1} s window ({pct:.0}% > --max-outage {max_pct}%), \
         between {:.1} s and {:.1} s (frozen, killed or unreachable: see the errors above); this throughput is not the server's",
        first.t_s,
        last.t_s + last.duration_s
    ))
}

fn compile(a: &ScriptArgs) -> Result<(Program, HashMap<String, String>), Fail> {
    if a.script.is_dir() {
        return Err(input(format!("{}: is a folder, not a workload script (give the .rn file, e.g. workloads/empty.rn)", a.script.display())));
    }
    if !a.script.is_file() {
        return Err(input(format!("{}: no such workload script", a.script.display())));
    }
    let params = parse_params(&a.params)?;
    // The diagnostics (file:line:column) are already on stderr.
    let program = Program::compile(&a.script, &params).map_err(|e| Fail(2, format!("cannot compile: {e}")))?;
    Ok((program, params))
}

fn runtime() -> Result<tokio::runtime::Runtime, Fail> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(failed)
}

/// `schema` / `erase`: one call of the script's function of that name on a fresh context.
pub fn cmd_once(a: &ScriptArgs, name: &str, if_defined: bool) -> Result<(), Fail> {
    let (program, _) = compile(a)?;
    if !program.has_function(name) {
        if if_defined {
            eprintln!("{} has no `{name}` function: nothing to do", a.script.display());
            return Ok(());
        }
        return Err(input(format!("{} has no `{name}` function (`pub async fn {name}(ctx)`)", a.script.display())));
    }
    let cfg = Arc::new(cql_config(a)?);
    let rt = runtime()?;
    let ctx = rune::to_value(Context::new(cfg)).map_err(failed)?;
    exec::call_once(&rt, &program, &ctx, name, &a.budgets()).map_err(|e| failed(format!("{e:#}")))?;
    eprintln!("{name}: done");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::SampleRow;

    fn period(i: usize, requests: u64, request_errors: u64, cycles: u64) -> SampleRow {
        SampleRow { t_s: i as f64, duration_s: 1.0, requests, request_errors, cycles, ..Default::default() }
    }

    #[test]
    fn an_outage_longer_than_the_share_fails_the_run() {
        // Answers, then 3 s frozen (timeouts and idle periods), then answers again: 30% of 10 s.
        let mut s: Vec<SampleRow> = (0..10).map(|i| period(i, 1000, 0, 1000)).collect();
        s[4] = period(4, 4, 4, 4);
        s[5] = period(5, 0, 0, 0);
        // At its thaw the node answers the few requests it had queued: still under 1% of a period's.
        s[6] = period(6, 4, 0, 4);
        let msg = outage(&s, 10.0, 10.0).expect("30% down");
        assert!(msg.contains("for 3.0 s of the 10.0 s window (30% > --max-outage 10%)"), "{msg}");
        assert!(msg.contains("between 4.0 s and 7.0 s"), "{msg}");
        assert_eq!(outage(&s, 10.0, 30.0), None, "at the share, not over it");
        // An idle period alone (a low --rate) is not an outage, nor is a workload without requests.
        s[4] = period(4, 0, 0, 0);
        s[6] = period(6, 0, 0, 0);
        assert_eq!(outage(&s, 10.0, 10.0), None);
        let empty: Vec<SampleRow> = (0..10).map(|i| period(i, 0, 0, 1000)).collect();
        assert_eq!(outage(&empty, 10.0, 0.0), None);
        // A period where some requests failed but others succeeded is not down.
        s[4] = period(4, 1000, 500, 1000);
        assert_eq!(outage(&s, 10.0, 0.0), None);
    }
}
