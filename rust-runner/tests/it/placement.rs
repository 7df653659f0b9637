//! Where the workers ran and where their heaps were (issue 28): with `$LAB_RAW` set, a run appends a line
//! per worker to `$LAB_RAW/ran-on.csv`, which the lab's guard checks against the point's membind. On any
//! host, each pinned worker ran on its CPU and its heap is on a node that has memory. No Cassandra.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::common;

/// The kernel's node list ("0", "0-1,3") of the nodes with memory; {0} where the kernel has no NUMA.
fn nodes_with_memory() -> BTreeSet<i64> {
    let text = std::fs::read_to_string("/sys/devices/system/node/has_memory").unwrap_or_else(|_| "0".into());
    let mut out = BTreeSet::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        out.extend(lo.parse::<i64>().unwrap()..=hi.parse::<i64>().unwrap());
    }
    out
}

#[test]
fn each_worker_says_where_it_ran_and_where_its_heap_is() {
    let _runners = common::shared();
    let raw = std::env::temp_dir().join(format!("runner-ran-on-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&raw);
    std::fs::create_dir_all(&raw).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
        .env("LAB_RAW", &raw)
        .env_remove("RUNNER_NODES")
        .args(["run", "workloads/empty.rn", "--cpus", "0,0", "-d", "200ms", "-w", "50ms", "-q", "--variant", "v"])
        .output()
        .expect("runner");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(raw.join("ran-on.csv")).expect("ran-on.csv");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "probe,variant,cpus,thread,pinned_to,first_cpu,last_cpu,mem_node,mem_want", "{text}");
    assert_eq!(lines.len(), 3, "a line per worker:\n{text}");
    let nodes = nodes_with_memory();
    for (w, line) in lines[1..].iter().enumerate() {
        assert!(line.starts_with(&format!("runner,\"v\",\"0,0\",{w},0,0,0,")), "{line}");
        let f: Vec<i64> = line.rsplit(',').take(2).map(|x| x.parse().unwrap()).collect();
        assert_eq!(f[0], -1, "the runner binds no memory itself: {line}");
        assert!(nodes.contains(&f[1]), "heap on node {} of {nodes:?}: {line}", f[1]);
    }
    let _ = std::fs::remove_dir_all(&raw);
}
