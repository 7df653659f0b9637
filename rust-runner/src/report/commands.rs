//! The commands that read saved reports: `show` (with a Welch comparison), `list`, `hdr`.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use super::{decode_histogram, fmt_num, Report, SampleRow};
use crate::stats::{welch, Mean};

/// `show REPORT [--baseline OTHER]`.
pub fn show(path: &Path, baseline: Option<&Path>) -> Result<()> {
    let a = Report::load(path)?;
    let Some(bpath) = baseline else {
        print!("{}", a.summary());
        return Ok(());
    };
    let b = Report::load(bpath)?;
    println!("{:>24}  {:>16}  {:>16}  {:>9}  {:>9}", "metric", "this", "baseline", "change", "p (Welch)");
    let series = |r: &Report, f: fn(&SampleRow) -> f64| -> Mean {
        let half = r.sampling_s / 2.0;
        Mean::of(&r.samples.iter().filter(|s| s.duration_s >= half).map(f).collect::<Vec<_>>())
    };
    let metrics: [(&str, fn(&SampleRow) -> f64); 4] = [
        ("calls_per_s", |s| s.calls_per_s),
        ("latency_mean_us", |s| s.latency_mean_us),
        ("latency_p50_us", |s| s.latency_p50_us),
        ("latency_p99_us", |s| s.latency_p99_us),
    ];
    for (name, f) in metrics {
        let (ma, mb) = (series(&a, f), series(&b, f));
        let p = welch(&ma, &mb).map(|w| format!("{:.4}", w.p)).unwrap_or_else(|| "-".into());
        let change = if mb.mean != 0.0 { format!("{:+.1}%", (ma.mean / mb.mean - 1.0) * 100.0) } else { "-".into() };
        println!("{name:>24}  {:>16}  {:>16}  {change:>9}  {p:>9}", fmt_num(ma.mean), fmt_num(mb.mean));
    }
    for (name, va, vb) in [
        ("client_cpu_per_op_us", a.result.client_cpu_per_op_us, b.result.client_cpu_per_op_us),
        ("peak_rss_MiB", a.result.peak_rss_bytes as f64 / 1048576.0, b.result.peak_rss_bytes as f64 / 1048576.0),
        ("errors", a.result.errors as f64, b.result.errors as f64),
    ] {
        let change = if vb != 0.0 { format!("{:+.1}%", (va / vb - 1.0) * 100.0) } else { "-".into() };
        println!("{name:>24}  {:>16}  {:>16}  {change:>9}  {:>9}", fmt_num(va), fmt_num(vb), "-");
    }
    Ok(())
}

/// `list [DIR]`: saved reports, oldest first.
pub fn list(dir: &Path) -> Result<()> {
    let mut reports = Vec::new();
    if dir.is_dir() {
        for entry in std::fs::read_dir(dir)? {
            let p = entry?.path();
            if p.extension().is_some_and(|e| e == "json") {
                if let Ok(r) = Report::load(&p) {
                    reports.push((p, r));
                }
            }
        }
    }
    reports.sort_by_key(|(_, r)| r.unix_time);
    println!("{:<20} {:<8} {:<28} {:>7} {:<10} {:>14} {:>10}  file", "time", "command", "workload", "threads", "sharing", "calls/s", "p99 us");
    for (p, r) in reports {
        let workload = Path::new(&r.workload).file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
        println!("{:<20} {:<8} {:<28} {:>7} {:<10} {:>14} {:>10.1}  {}", r.timestamp, r.command, workload, r.threads,
            r.sharing, fmt_num(r.result.calls_per_s.value), r.result.latency_us.p99, p.display());
    }
    Ok(())
}

/// `hdr REPORT [-o FILE]`: the per-period cycle-latency histograms as an HdrHistogram interval log.
pub fn hdr(path: &Path, out: Option<&Path>) -> Result<()> {
    let r = Report::load(path)?;
    let mut buf = Vec::new();
    {
        let mut ser = V2DeflateSerializer::new();
        let start = std::time::UNIX_EPOCH + Duration::from_secs(r.unix_time);
        let mut w = IntervalLogWriterBuilder::new()
            .add_comment(&format!("runner {} {}", r.command, r.workload))
            .with_start_time(start)
            .with_base_time(start)
            .with_max_value_divisor(1000.0) // values are ns; the log's max column in us
            .begin_log_with(&mut buf, &mut ser)?;
        let tag = Tag::new("cycle").expect("tag");
        for s in &r.samples {
            let h = decode_histogram(&s.histogram)?;
            w.write_histogram(&h, Duration::from_secs_f64(s.t_s), Duration::from_secs_f64(s.duration_s), Some(tag))
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        }
    }
    match out {
        Some(p) => std::fs::write(p, &buf).with_context(|| format!("cannot write {}", p.display()))?,
        None => std::io::stdout().write_all(&buf)?,
    }
    Ok(())
}
