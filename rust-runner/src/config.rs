//! The command line (clap): the commands, their flags and the limits on their values, and the
//! conversions of the flags into what the commands use (script parameters, the CQL connection).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use scylla::statement::Consistency;

use crate::error::{input, Fail};
use crate::exec::Span;
use crate::scripting::context::CqlConfig;
use crate::scripting::Sharing;
use crate::sys;

#[derive(Parser)]
#[command(name = "runner", version, about = "Rune-scripted Cassandra benchmark (Latte-compatible workloads)")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
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
pub struct ScriptArgs {
    /// The workload script (.rn); a lib.rn beside it is loaded too.
    pub script: PathBuf,
    /// Script parameter read by latte::param!("name", default) (repeatable).
    #[arg(short = 'P', value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Cassandra contact points, host[:port], comma-separated or repeated.
    #[arg(long, env = "RUNNER_NODES", default_value = "127.0.0.1:9042", value_delimiter = ',')]
    pub nodes: Vec<String>,
    /// Consistency level (ONE, LOCAL_ONE, QUORUM, LOCAL_QUORUM, ALL, …).
    #[arg(long, default_value = "LOCAL_QUORUM")]
    pub consistency: String,
    /// Client-side timeout of one request.
    #[arg(long, default_value = "5s", value_parser = positive_duration)]
    pub request_timeout: Duration,
    /// Timeout for opening the session: TCP connect and the CQL handshake with every contact point.
    #[arg(long, default_value = "5s", value_parser = positive_duration)]
    pub connect_timeout: Duration,
    /// Retries of a failed request (timeouts, overload, lost connections).
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
    /// Backoff before the first retry; doubled for each next one.
    #[arg(long, default_value = "100ms", value_parser = duration)]
    pub retry_delay: Duration,
    /// Longest backoff between retries.
    #[arg(long, default_value = "5s", value_parser = duration)]
    pub retry_max_delay: Duration,
    /// Credentials, USER:PASSWORD.
    #[arg(long)]
    pub user: Option<String>,
    /// Memory the script's values may hold, per worker thread (and for schema/erase/prepare): e.g. 512MiB, 2GiB.
    #[arg(long, default_value = "1GiB", value_parser = size)]
    pub script_memory: usize,
    /// Longest one call of a script function may keep computing (checked every 10k instructions; a call
    /// stuck in a native function's callback is ended by the watchdog after this plus max(1s, 10%)).
    #[arg(long, default_value = "60s", value_parser = positive_duration)]
    pub script_time: Duration,
    /// Deepest call stack (script functions calling each other) one call may build.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub script_depth: u32,
    /// Native stack a script call may use (an `async fn` awaited inside another nests the thread's
    /// stack, about 1 KB a level): e.g. 8MiB.
    #[arg(long, default_value = "8MiB", value_parser = stack_size)]
    pub script_stack: usize,
}

impl ScriptArgs {
    /// The script VM's budgets from the flags (every phase uses them: see exec::Budgets).
    pub fn budgets(&self) -> crate::exec::Budgets {
        crate::exec::Budgets { memory: self.script_memory, time: self.script_time, depth: self.script_depth as usize, stack: self.script_stack }
    }
}

#[derive(Args, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub script: ScriptArgs,
    /// Worker threads (default: one per --cpus entry, else 1).
    #[arg(short, long)]
    pub threads: Option<usize>,
    /// CPUs to pin the workers to, one worker per CPU, e.g. 0-3,8.
    #[arg(long)]
    pub cpus: Option<String>,
    /// Pin workers to --cpus (0 = leave them unbound, the lab's `unpinned` placement).
    #[arg(long, default_value = "1", value_parser = boolish, action = clap::ArgAction::Set)]
    pub pin: bool,
    /// Calls in flight per worker.
    #[arg(short, long, default_value_t = 128)]
    pub concurrency: usize,
    /// Target calls per second over all workers (latency then counts from each intended start).
    #[arg(short, long)]
    pub rate: Option<f64>,
    /// Measured span: a cycle count (1000000) or a time (30s, 2m). Default: 60s; `load`: the load count.
    #[arg(short, long)]
    pub duration: Option<Span>,
    /// Warmup before measuring: cycles or time. Default 1s for `run`, none for `load`.
    #[arg(short, long)]
    pub warmup: Option<Span>,
    /// Sampling period for the time series and the throughput error bar (at least 1ms).
    #[arg(long, value_parser = positive_duration)]
    pub sampling: Option<Duration>,
    /// Function to call, NAME[:WEIGHT] (repeatable); default `run`.
    #[arg(short = 'f', long = "function", value_name = "NAME[:WEIGHT]")]
    pub functions: Vec<String>,
    /// How workers get the compiled program: one shared set of Arcs, or a deep copy each.
    #[arg(long, value_enum, default_value = "per-thread")]
    pub program_sharing: Sharing,
    /// Fail the run when Cassandra answered no request for more than this % of the measured window
    /// (frozen, killed or unreachable): the throughput of such a run is not the server's.
    #[arg(long, default_value_t = 10.0, value_parser = percent)]
    pub max_outage: f64,
    /// Stop after this many failed cycles.
    #[arg(long, default_value_t = 1000)]
    pub max_errors: u64,
    /// The `variant` column of the CSV rows (default: the --program-sharing mode, shared-arc or per-thread).
    #[arg(long)]
    pub variant: Option<String>,
    /// Free-form tag stored in the report (repeatable).
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// Where to save the JSON report (default: $LAB_RAW/runner-<command>.json or .work/runner-reports/).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Do not print CSV rows on stdout.
    #[arg(long)]
    pub no_csv: bool,
    /// Do not print the summary on stderr.
    #[arg(short, long)]
    pub quiet: bool,
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

/// A byte count with an optional binary suffix (K/KiB, M/MiB, G/GiB); at least 1 MiB, at most 1 TiB.
/// A stack budget: a size up to 1 GiB (each thread that runs scripts reserves it, plus headroom).
fn stack_size(s: &str) -> Result<usize, String> {
    size(s).and_then(|b| if b <= 1 << 30 { Ok(b) } else { Err(format!("'{s}' is out of range (1MiB to 1GiB)")) })
}

fn size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("'{s}' is not a size (e.g. 512MiB, 2GiB)")),
    };
    let n: u64 = num.parse().map_err(|_| format!("'{s}' is not a size (e.g. 512MiB, 2GiB)"))?;
    let bytes = n.checked_mul(mult).filter(|b| (1 << 20..=1 << 40).contains(b));
    bytes.map(|b| b as usize).ok_or_else(|| format!("'{s}' is out of range (1MiB to 1TiB)"))
}

/// A share in % (0 to 100).
fn percent(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().trim_end_matches('%').parse().map_err(|_| format!("'{s}' is not a percentage"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("'{s}' is not between 0 and 100"));
    }
    Ok(v)
}

fn boolish(s: &str) -> Result<bool, String> {
    match s {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(format!("'{s}' is not 0/1")),
    }
}

/// More workers than any host here has CPUs by far; past this, thread stacks and sessions only add load.
pub const MAX_THREADS: usize = 1024;

/// At most this many sampling periods in a timed run: each one keeps a compressed histogram in memory.
pub const MAX_PERIODS: u128 = 100_000;

pub fn parse_params(list: &[String]) -> Result<HashMap<String, String>, Fail> {
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

pub fn cql_config(a: &ScriptArgs) -> Result<CqlConfig, Fail> {
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
