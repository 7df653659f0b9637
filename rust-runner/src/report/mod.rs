//! Gathering samples into a run's statistics, and the report formats: a JSON report (everything, for
//! `show` / `list` / `hdr`) and tidy CSV rows on stdout (what the lab's sweep engine reads).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

mod codec;
mod commands;

pub use codec::{decode_histogram, encode_histogram};
pub use commands::{hdr, list, show};

use crate::exec::Sample;
use crate::stats::Mean;

/// Percentiles of a latency histogram, in microseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub p25: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub p99_99: f64,
    pub max: f64,
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Percentiles {
            count: h.len(),
            min: us(h.min()),
            mean: h.mean() / 1000.0,
            p25: us(h.value_at_quantile(0.25)),
            p50: us(h.value_at_quantile(0.5)),
            p75: us(h.value_at_quantile(0.75)),
            p90: us(h.value_at_quantile(0.9)),
            p95: us(h.value_at_quantile(0.95)),
            p99: us(h.value_at_quantile(0.99)),
            p99_9: us(h.value_at_quantile(0.999)),
            p99_99: us(h.value_at_quantile(0.9999)),
            max: us(h.max()),
        }
    }
}

/// One sampling period, all workers merged.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SampleRow {
    pub t_s: f64,
    pub duration_s: f64,
    pub cycles: u64,
    pub calls_per_s: f64,
    pub errors: u64,
    pub requests: u64,
    pub request_errors: u64,
    pub retries: u64,
    pub rows: u64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub latency_mean_us: f64,
    /// The cycle-latency histogram of this period (HdrHistogram V2 deflate, base64).
    pub histogram: String,
}

/// Merges per-worker samples by period; a period is final once every worker has moved past it, so
/// memory stays bounded however long the run.
pub struct Collector {
    sampling: Duration,
    pending: BTreeMap<u64, Sample>,
    last_index: Vec<Option<u64>>,
    pub rows: Vec<SampleRow>,
    pub cycle_ns: Histogram<u64>,
    pub request_ns: Histogram<u64>,
    pub service_ns: Option<Histogram<u64>>,
    pub cycles: u64,
    pub errors: u64,
    pub abandoned: u64,
    pub requests: u64,
    pub request_errors: u64,
    pub retries: u64,
    pub rows_read: u64,
}

fn merge(into: &mut Sample, s: Sample) {
    into.cycles += s.cycles;
    into.errors += s.errors;
    into.abandoned += s.abandoned;
    into.req.requests += s.req.requests;
    into.req.errors += s.req.errors;
    into.req.retries += s.req.retries;
    into.req.rows += s.req.rows;
    let _ = into.req.latency_ns.add(&s.req.latency_ns);
    let _ = into.cycle_ns.add(&s.cycle_ns);
    if let (Some(a), Some(b)) = (into.service_ns.as_mut(), s.service_ns.as_ref()) {
        let _ = a.add(b);
    }
}

impl Collector {
    pub fn new(threads: usize, sampling: Duration, with_service: bool) -> Collector {
        let h = || Histogram::new(3).expect("histogram");
        Collector {
            sampling,
            pending: BTreeMap::new(),
            last_index: vec![None; threads],
            rows: Vec::new(),
            cycle_ns: h(),
            request_ns: h(),
            service_ns: with_service.then(h),
            cycles: 0,
            errors: 0,
            abandoned: 0,
            requests: 0,
            request_errors: 0,
            retries: 0,
            rows_read: 0,
        }
    }

    pub fn add(&mut self, worker: usize, s: Sample) {
        self.last_index[worker] = Some(s.index);
        match self.pending.get_mut(&s.index) {
            Some(p) => merge(p, s),
            None => {
                self.pending.insert(s.index, s);
            }
        }
        let done_below = self.last_index.iter().map(|i| i.unwrap_or(0)).min().unwrap_or(0);
        while let Some((&idx, _)) = self.pending.first_key_value() {
            if idx >= done_below {
                break;
            }
            let s = self.pending.pop_first().unwrap().1;
            self.finish_sample(s, None);
        }
    }

    /// Finalises the remaining periods; `elapsed` bounds the last (partial) one.
    pub fn finish(&mut self, elapsed: Duration) {
        while let Some((_, s)) = self.pending.pop_first() {
            self.finish_sample(s, Some(elapsed));
        }
    }

    fn finish_sample(&mut self, s: Sample, elapsed: Option<Duration>) {
        let t = self.sampling.as_secs_f64() * s.index as f64;
        let mut dur = self.sampling.as_secs_f64();
        if let Some(e) = elapsed {
            dur = dur.min(e.as_secs_f64() - t).max(1e-9);
        }
        self.cycles += s.cycles;
        self.errors += s.errors;
        self.abandoned += s.abandoned;
        self.requests += s.req.requests;
        self.request_errors += s.req.errors;
        self.retries += s.req.retries;
        self.rows_read += s.req.rows;
        let _ = self.cycle_ns.add(&s.cycle_ns);
        let _ = self.request_ns.add(&s.req.latency_ns);
        if let (Some(a), Some(b)) = (self.service_ns.as_mut(), s.service_ns.as_ref()) {
            let _ = a.add(b);
        }
        let p = Percentiles::of(&s.cycle_ns);
        self.rows.push(SampleRow {
            t_s: t,
            duration_s: dur,
            cycles: s.cycles,
            calls_per_s: s.cycles as f64 / dur,
            errors: s.errors,
            requests: s.req.requests,
            request_errors: s.req.errors,
            retries: s.req.retries,
            rows: s.req.rows,
            latency_p50_us: p.p50,
            latency_p99_us: p.p99,
            latency_mean_us: p.mean,
            histogram: encode_histogram(&s.cycle_ns),
        });
    }

    /// Per-period throughputs, leaving out a final period shorter than half the sampling period.
    pub fn throughputs(&self) -> Vec<f64> {
        let half = self.sampling.as_secs_f64() / 2.0;
        self.rows.iter().filter(|r| r.duration_s >= half).map(|r| r.calls_per_s).collect()
    }
}

/// Throughput with its error bar.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Throughput {
    /// All cycles over the whole measured time.
    pub value: f64,
    /// Half-width of the 95% interval, from per-period throughputs corrected for autocorrelation.
    #[serde(deserialize_with = "crate::stats::null_as_nan")]
    pub ci95: f64,
    pub per_sample: Mean,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunResult {
    pub elapsed_s: f64,
    pub cycles: u64,
    pub errors: u64,
    /// Calls still running when the phase ended (a stuck request, a script that never returns), dropped.
    #[serde(default)]
    pub abandoned: u64,
    pub calls_per_s: Throughput,
    pub requests: u64,
    pub requests_per_s: f64,
    pub request_errors: u64,
    pub retries: u64,
    pub rows: u64,
    /// Cycle latency; with `--rate`, measured from each call's intended start.
    pub latency_us: Percentiles,
    pub request_latency_us: Percentiles,
    /// With `--rate`: from each call's actual start (what the latency would be without queueing).
    pub service_time_us: Option<Percentiles>,
    pub cpu_s: f64,
    pub user_s: f64,
    pub system_s: f64,
    #[serde(deserialize_with = "crate::stats::null_as_nan")]
    pub client_cpu_per_op_us: f64,
    pub peak_rss_bytes: u64,
    /// % of the measured span during which every worker was running (corun.rs); absent in old reports.
    #[serde(default)]
    pub corun_pct: Option<f64>,
    pub stopped_on_errors: bool,
    /// Stopped by Ctrl-C (or SIGTERM) before its span was over: a partial run.
    #[serde(default)]
    pub interrupted: bool,
    /// Ended by a breach of the script VM's budgets (`--script-memory`, `--script-time`,
    /// `--script-depth`): the command's failure line, `run: …` (`run (warmup): …`); a partial run.
    #[serde(default)]
    pub budget_breach: Option<String>,
    /// The measured span was not run to its end: `interrupted`, `budget_breach` or
    /// `stopped_on_errors` says why. What was measured until then is all in this report.
    #[serde(default)]
    pub partial: bool,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Report {
    pub runner_version: String,
    pub command: String,
    pub workload: String,
    pub functions: Vec<String>,
    pub params: BTreeMap<String, String>,
    pub tags: Vec<String>,
    pub timestamp: String,
    pub unix_time: u64,
    pub threads: usize,
    pub cpus: Option<String>,
    pub sharing: String,
    #[serde(default)]
    pub variant: String,
    pub concurrency: usize,
    pub rate: Option<f64>,
    pub duration: String,
    pub warmup: String,
    pub sampling_s: f64,
    pub nodes: Vec<String>,
    pub result: RunResult,
    pub samples: Vec<SampleRow>,
}

impl Report {
    pub fn save(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let bytes = serde_json::to_vec_pretty(self)?;
        // `-o /dev/null` (or a FIFO): written through. Renamed over, the device node became a regular
        // file for every program on the host (as root).
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()));
        }
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    }

    pub fn load(path: &Path) -> Result<Report> {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_slice(&bytes).with_context(|| format!("{} is not a runner report", path.display()))
    }

    /// Tidy CSV rows (docs/design.md): metric,value,unit plus the variant this run measured.
    pub fn write_csv(&self, out: &mut impl Write) -> std::io::Result<()> {
        let r = &self.result;
        writeln!(out, "variant,metric,value,unit")?;
        let mut row = |m: &str, v: f64, u: &str| -> std::io::Result<()> {
            if v.is_finite() {
                writeln!(out, "{},{m},{},{u}", csv_field(&self.variant), fmt_num(v))
            } else {
                Ok(())
            }
        };
        row("calls_per_s", r.calls_per_s.value, "1/s")?;
        row("calls_per_s_ci95", r.calls_per_s.ci95, "1/s")?;
        for (name, v) in [
            ("latency_mean", r.latency_us.mean),
            ("latency_p50", r.latency_us.p50),
            ("latency_p90", r.latency_us.p90),
            ("latency_p99", r.latency_us.p99),
            ("latency_p999", r.latency_us.p99_9),
            ("latency_max", r.latency_us.max),
        ] {
            row(name, v, "us")?;
        }
        if let Some(s) = &r.service_time_us {
            row("service_time_p50", s.p50, "us")?;
            row("service_time_p99", s.p99, "us")?;
        }
        if r.requests > 0 {
            row("ops_per_s", r.requests_per_s, "1/s")?;
            row("request_latency_p50", r.request_latency_us.p50, "us")?;
            row("request_latency_p99", r.request_latency_us.p99, "us")?;
            row("request_errors", r.request_errors as f64, "count")?;
            row("retries", r.retries as f64, "count")?;
            row("rows", r.rows as f64, "count")?;
        }
        row("errors", r.errors as f64, "count")?;
        row("abandoned", r.abandoned as f64, "count")?;
        row("cycles", r.cycles as f64, "count")?;
        row("client_cpu_per_op", r.client_cpu_per_op_us, "us")?;
        row("client_cpu", r.cpu_s, "s")?;
        row("peak_rss", r.peak_rss_bytes as f64 / (1024.0 * 1024.0), "MiB")?;
        if let Some(c) = r.corun_pct {
            row("corun_pct", c, "%")?;
        }
        Ok(())
    }

    /// A human summary (stderr of `run`, and `show`).
    pub fn summary(&self) -> String {
        let r = &self.result;
        let mut s = String::new();
        let mut line = |k: &str, v: String| s.push_str(&format!("{k:>22}  {v}\n"));
        line("workload", format!("{} ({})", self.workload, self.functions.join(", ")));
        line("threads", format!("{} on CPUs {}, {}, concurrency {}", self.threads,
            self.cpus.as_deref().unwrap_or("unpinned"), self.sharing, self.concurrency));
        let why = if r.budget_breach.is_some() {
            " (ended by a script budget: a partial run)"
        } else if r.interrupted {
            " (interrupted: a partial run)"
        } else if r.stopped_on_errors {
            " (stopped on errors: a partial run)"
        } else {
            ""
        };
        line("elapsed", format!("{:.3} s{why}", r.elapsed_s));
        line("cycles", format!("{} ({} errors{})", r.cycles, r.errors,
            if r.abandoned > 0 { format!(", {} abandoned unfinished", r.abandoned) } else { String::new() }));
        line("throughput", format!("{} ± {} calls/s", fmt_num(r.calls_per_s.value), fmt_num(r.calls_per_s.ci95)));
        if r.requests > 0 {
            line("requests", format!("{} ({} errors, {} retries, {} rows), {} req/s", r.requests, r.request_errors,
                r.retries, r.rows, fmt_num(r.requests_per_s)));
            let q = &r.request_latency_us;
            line("request latency [us]", format!("p50 {:.1}  p99 {:.1}  max {:.1}", q.p50, q.p99, q.max));
        }
        let l = &r.latency_us;
        line("cycle latency [us]", format!("min {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  max {:.2}",
            l.min, l.p50, l.p90, l.p99, l.p99_9, l.max));
        if let Some(q) = &r.service_time_us {
            line("service time [us]", format!("p50 {:.1}  p99 {:.1}  max {:.1}", q.p50, q.p99, q.max));
        }
        line("client CPU", format!("{:.3} s ({:.3} us per cycle)", r.cpu_s, r.client_cpu_per_op_us));
        line("peak RSS", format!("{:.1} MiB", r.peak_rss_bytes as f64 / 1048576.0));
        if let Some(c) = r.corun_pct {
            line("workers running", format!("all of them {c:.1}% of the measured span"));
        }
        s
    }
}

/// Quotes a CSV field when it needs it.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "nan".into();
    }
    if v.abs() >= 1000.0 || v == v.trunc() {
        format!("{:.0}", v)
    } else if v.abs() >= 1.0 {
        format!("{:.3}", v)
    } else {
        format!("{:.6}", v)
    }
}

/// Where a report goes when `-o` is not given: the sweep's raw folder, else `runner-reports/`.
pub fn default_report_path(workload: &Path, command: &str) -> PathBuf {
    if let Ok(raw) = std::env::var("LAB_RAW") {
        if !raw.is_empty() {
            return Path::new(&raw).join(format!("runner-{command}.json"));
        }
    }
    let stem = workload.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "workload".into());
    let ts = chrono_like_now().replace([':', '-'], "");
    PathBuf::from(".work/runner-reports").join(format!("{stem}-{command}-{ts}.json"))
}

/// UTC "YYYY-MM-DDTHH:MM:SSZ" without a date crate.
pub fn chrono_like_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let days = (secs / 86400) as i64;
    let (h, m, s) = (secs % 86400 / 3600, secs % 3600 / 60, secs % 60);
    let (y, mo, d) = crate::scripting::rows::civil_from_days(days);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collector_merges_workers_by_period() {
        let mut c = Collector::new(2, Duration::from_secs(1), false);
        let mk = |i, n| {
            let mut s = Sample::new_for_test(i);
            s.cycles = n;
            for _ in 0..n {
                s.cycle_ns.record(1000).unwrap();
            }
            s
        };
        c.add(0, mk(0, 10));
        c.add(1, mk(0, 20));
        c.add(0, mk(1, 5));
        assert!(c.rows.is_empty(), "period 0 is final only once worker 1 passed it");
        c.add(1, mk(1, 5));
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.rows[0].cycles, 30);
        c.finish(Duration::from_millis(1500));
        assert_eq!(c.rows.len(), 2);
        assert!((c.rows[1].duration_s - 0.5).abs() < 1e-9);
        assert_eq!(c.cycles, 40);
        assert_eq!(c.throughputs().len(), 2);
    }

    #[test]
    fn reports_with_nan_round_trip() {
        // A one-period run has no error bar (NaN); JSON stores null and loading must accept it.
        let mut r = Report::default();
        r.result.calls_per_s.ci95 = f64::NAN;
        r.result.client_cpu_per_op_us = f64::NAN;
        let p = std::env::temp_dir().join(format!("runner-report-{}.json", std::process::id()));
        r.save(&p).unwrap();
        let back = Report::load(&p).unwrap();
        assert!(back.result.calls_per_s.ci95.is_nan());
        let mut csv = Vec::new();
        back.write_csv(&mut csv).unwrap();
        assert!(!String::from_utf8(csv).unwrap().contains("calls_per_s_ci95"), "NaN rows are left out");
    }

    #[test]
    fn dates() {
        let s = chrono_like_now();
        assert_eq!(s.len(), 20);
        assert!(s.starts_with("20"));
    }
}
