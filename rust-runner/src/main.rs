//! `runner`: a Cassandra benchmarking client whose workloads are Rune scripts (Latte-compatible).
//! See README.md for the commands and the script API.

mod alloc;
mod corun;
mod exec;
mod run;
mod report;
mod scripting;
mod stats;
mod sys;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use scylla::statement::Consistency;

use crate::scripting::context::{Context, CqlConfig};
use crate::exec::Span;
use crate::scripting::{Program, Sharing};

#[derive(Parser)]
#[command(name = "runner", version, about = "Rune-scripted Cassandra benchmark (Latte-compatible workloads)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the workload's `schema` function (create keyspaces and tables).
    Schema(ScriptArgs),
    /// Run the workload's `erase` function (delete the data `load` wrote; exit 2 if it has none).
    Erase {
        #[command(flatten)]
        script: ScriptArgs,
        /// A script without `erase` is not an error: say so and exit 0 (for drivers of many scripts).
        #[arg(long)]
        if_defined: bool,
    },
    /// Run `prepare`, then `load(ctx, i)` for i in 0..ctx.load_cycle_count.
    Load(RunArgs),
    /// Run `prepare`, a warmup, then the measured `run(ctx, i)` (or the -f functions).
    Run(RunArgs),
    /// Print a saved report; with --baseline, compare two reports (Welch's t-test per metric).
    Show {
        report: PathBuf,
        #[arg(short, long)]
        baseline: Option<PathBuf>,
    },
    /// List saved reports in a folder.
    List {
        #[arg(default_value = ".work/runner-reports")]
        dir: PathBuf,
    },
    /// Export a report's per-period latency histograms as an HdrHistogram interval log.
    Hdr {
        report: PathBuf,
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

#[derive(Args, Clone)]
struct ScriptArgs {
    /// The workload script (.rn); a lib.rn beside it is loaded too.
    script: PathBuf,
    /// Script parameter read by latte::param!("name", default) (repeatable).
    #[arg(short = 'P', value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// Cassandra contact points, host[:port], comma-separated or repeated.
    #[arg(long, env = "RUNNER_NODES", default_value = "127.0.0.1:9042", value_delimiter = ',')]
    nodes: Vec<String>,
    /// Consistency level (ONE, LOCAL_ONE, QUORUM, LOCAL_QUORUM, ALL, …).
    #[arg(long, default_value = "LOCAL_QUORUM")]
    consistency: String,
    /// Client-side timeout of one request.
    #[arg(long, default_value = "5s", value_parser = positive_duration)]
    request_timeout: Duration,
    /// Timeout for opening the session: TCP connect and the CQL handshake with every contact point.
    #[arg(long, default_value = "5s", value_parser = positive_duration)]
    connect_timeout: Duration,
    /// Retries of a failed request (timeouts, overload, lost connections).
    #[arg(long, default_value_t = 3)]
    retries: u32,
    /// Backoff before the first retry; doubled for each next one.
    #[arg(long, default_value = "100ms", value_parser = duration)]
    retry_delay: Duration,
    /// Longest backoff between retries.
    #[arg(long, default_value = "5s", value_parser = duration)]
    retry_max_delay: Duration,
    /// Credentials, USER:PASSWORD.
    #[arg(long)]
    user: Option<String>,
}

#[derive(Args, Clone)]
struct RunArgs {
    #[command(flatten)]
    script: ScriptArgs,
    /// Worker threads (default: one per --cpus entry, else 1).
    #[arg(short, long)]
    threads: Option<usize>,
    /// CPUs to pin the workers to, one worker per CPU, e.g. 0-3,8.
    #[arg(long)]
    cpus: Option<String>,
    /// Pin workers to --cpus (0 = leave them unbound, the lab's `unpinned` placement).
    #[arg(long, default_value = "1", value_parser = boolish, action = clap::ArgAction::Set)]
    pin: bool,
    /// Calls in flight per worker.
    #[arg(short, long, default_value_t = 128)]
    concurrency: usize,
    /// Target calls per second over all workers (latency then counts from each intended start).
    #[arg(short, long)]
    rate: Option<f64>,
    /// Measured span: a cycle count (1000000) or a time (30s, 2m). Default: 60s; `load`: the load count.
    #[arg(short, long)]
    duration: Option<Span>,
    /// Warmup before measuring: cycles or time. Default 1s for `run`, none for `load`.
    #[arg(short, long)]
    warmup: Option<Span>,
    /// Sampling period for the time series and the throughput error bar (at least 1ms).
    #[arg(long, value_parser = positive_duration)]
    sampling: Option<Duration>,
    /// Function to call, NAME[:WEIGHT] (repeatable); default `run`.
    #[arg(short = 'f', long = "function", value_name = "NAME[:WEIGHT]")]
    functions: Vec<String>,
    /// How workers get the compiled program: one shared set of Arcs, or a deep copy each.
    #[arg(long, value_enum, default_value = "per-thread")]
    program_sharing: Sharing,
    /// Stop after this many failed cycles.
    #[arg(long, default_value_t = 1000)]
    max_errors: u64,
    /// The `variant` column of the CSV rows (default: the --program-sharing mode, shared-arc or per-thread).
    #[arg(long)]
    variant: Option<String>,
    /// Free-form tag stored in the report (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Where to save the JSON report (default: $LAB_RAW/runner-<command>.json or .work/runner-reports/).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Do not print CSV rows on stdout.
    #[arg(long)]
    no_csv: bool,
    /// Do not print the summary on stderr.
    #[arg(short, long)]
    quiet: bool,
}

fn duration(s: &str) -> Result<Duration, String> {
    sys::parse_duration(s).ok_or_else(|| format!("'{s}' is not a duration (e.g. 500ms, 10s, 2m)"))
}

/// A duration of at least 1 ms: a zero sampling period would spin, a zero timeout fails everything.
fn positive_duration(s: &str) -> Result<Duration, String> {
    let d = duration(s)?;
    if d < Duration::from_millis(1) {
        return Err(format!("'{s}' is too short (at least 1ms)"));
    }
    Ok(d)
}

fn boolish(s: &str) -> Result<bool, String> {
    match s {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(format!("'{s}' is not 0/1")),
    }
}

/// More workers than any host here has CPUs by far; past this, thread stacks and sessions only add load.
const MAX_THREADS: usize = 1024;

/// At most this many sampling periods in a timed run: each one keeps a compressed histogram in memory.
const MAX_PERIODS: u128 = 100_000;

/// A failure with the exit code the lab's sweep engine understands: 2 = bad input, 1 = failed
/// (130 = interrupted, a partial report saved).
struct Fail(u8, String);

fn input(msg: impl Into<String>) -> Fail {
    Fail(2, msg.into())
}
fn failed(msg: impl std::fmt::Display) -> Fail {
    Fail(1, msg.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Schema(a) => cmd_once(&a, "schema", false),
        Command::Erase { script, if_defined } => cmd_once(&script, "erase", if_defined),
        Command::Load(a) => run::cmd_run(&a, "load"),
        Command::Run(a) => run::cmd_run(&a, "run"),
        Command::Show { report, baseline } => report::show(&report, baseline.as_deref()).map_err(|e| input(format!("{e:#}"))),
        Command::List { dir } => report::list(&dir).map_err(failed),
        Command::Hdr { report, output } => report::hdr(&report, output.as_deref()).map_err(|e| input(format!("{e:#}"))),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail(code, msg)) => {
            eprintln!("runner: {msg}");
            ExitCode::from(code)
        }
    }
}

fn parse_params(list: &[String]) -> Result<HashMap<String, String>, Fail> {
    list.iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
            _ => Err(input(format!("-P {p}: expected NAME=VALUE"))),
        })
        .collect()
}

fn parse_consistency(s: &str) -> Result<Consistency, Fail> {
    Ok(match s.to_ascii_uppercase().replace('-', "_").as_str() {
        "ANY" => Consistency::Any,
        "ONE" => Consistency::One,
        "TWO" => Consistency::Two,
        "THREE" => Consistency::Three,
        "QUORUM" => Consistency::Quorum,
        "ALL" => Consistency::All,
        "LOCAL_QUORUM" => Consistency::LocalQuorum,
        "EACH_QUORUM" => Consistency::EachQuorum,
        "LOCAL_ONE" => Consistency::LocalOne,
        _ => return Err(input(format!("unknown consistency '{s}'"))),
    })
}

fn cql_config(a: &ScriptArgs) -> Result<CqlConfig, Fail> {
    let user = match &a.user {
        Some(u) => Some(u.split_once(':').map(|(u, p)| (u.to_string(), p.to_string())).ok_or_else(|| input("--user wants USER:PASSWORD"))?),
        None => None,
    };
    let nodes = a.nodes.iter().map(|n| if n.contains(':') { n.clone() } else { format!("{n}:9042") }).collect();
    Ok(CqlConfig {
        nodes,
        consistency: parse_consistency(&a.consistency)?,
        request_timeout: a.request_timeout,
        connect_timeout: a.connect_timeout,
        retries: a.retries,
        retry_min: a.retry_delay,
        retry_max: a.retry_max_delay.max(a.retry_delay),
        user,
    })
}

fn compile(a: &ScriptArgs) -> Result<(Program, HashMap<String, String>), Fail> {
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
fn cmd_once(a: &ScriptArgs, name: &str, if_defined: bool) -> Result<(), Fail> {
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
    exec::call_once(&rt, &program, &ctx, name).map_err(|e| failed(format!("{e:#}")))?;
    eprintln!("{name}: done");
    Ok(())
}
