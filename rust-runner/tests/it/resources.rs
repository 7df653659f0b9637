//! Latte's workloads with their resources (issue 27 item 2): a Latte-style workload that reads resources
//! runs from a working folder that is neither the script's nor the project's, finding them as a Latte
//! user expects: a `resources/` folder above the script, then `$RUNNER_RESOURCES`, then the runner's own.
//! No Cassandra: the script's `prepare` reads the resources and its `run` uses them offline.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

/// A fresh folder per test outside the project (the walk up from a script inside it would find the
/// runner's own `rust-runner/resources/`).
fn fresh(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("runner-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Latte's tree: `latte/resources/` beside `latte/workloads/`, the script three folders below.
fn latte_tree(root: &Path, script: &str) -> PathBuf {
    let dir = root.join("latte/workloads/sai/orig");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(root.join("latte/resources")).unwrap();
    std::fs::write(root.join("latte/resources/tree_words.txt"), "alpha\nbeta\n").unwrap();
    let p = dir.join("w.rn");
    std::fs::write(&p, script).unwrap();
    p
}

/// Runs the runner with `cwd` as its working folder and `env` as the only `RUNNER_RESOURCES`.
fn runner_in(cwd: &Path, resources_env: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_runner"));
    c.current_dir(cwd).env_remove("LAB_RAW").env_remove("RUNNER_RESOURCES").args(args);
    if let Some(d) = resources_env {
        c.env("RUNNER_RESOURCES", d);
    }
    let out = c.output().expect("runner");
    eprintln!("$ runner {}\n{}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    out
}

// As Latte's sai/orig/lib.rn: tags from `variable_words.txt` in `prepare`, picked by `hash_select`.
const SCRIPT: &str = r#"use latte::*;
pub async fn prepare(ctx) {
    ctx.data.tags = fs::read_resource_lines("variable_words.txt")?;
    ctx.data.tree = fs::read_resource_lines("tree_words.txt")?;
    ctx.data.env = fs::read_resource_to_string("env_only.txt")?;
    Ok(())
}
pub async fn run(ctx, i) {
    let tag = hash_select(i, ctx.data.tags);
    assert!(tag.len() > 0);
    assert_eq!(ctx.data.tree, ["alpha", "beta"]);
    assert_eq!(ctx.data.env, "from the environment\n");
    Ok(())
}
"#;

#[test]
fn a_latte_workload_finds_its_resources_from_another_working_folder() {
    let _runners = common::shared();
    let root = fresh("res-tree");
    let script = latte_tree(&root, SCRIPT);
    let env = root.join("env");
    std::fs::create_dir_all(&env).unwrap();
    std::fs::write(env.join("env_only.txt"), "from the environment\n").unwrap();
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let out_json = root.join("r.json");
    // The script named by an absolute path and by a relative one from the other folder, and by its bare
    // name from its own folder (its folder is then "", the working folder).
    let rel = Path::new("../latte/workloads/sai/orig/w.rn");
    let own = script.parent().unwrap().to_path_buf();
    for (cwd, s) in [(&elsewhere, script.to_str().unwrap()), (&elsewhere, rel.to_str().unwrap()), (&own, "w.rn")] {
        let out = runner_in(
            cwd,
            Some(&env),
            &["run", s, "-d", "5", "-w", "0", "-c", "1", "--no-csv", "-q", "-o", out_json.to_str().unwrap()],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out_json).unwrap()).unwrap();
        assert_eq!(r["result"]["cycles"], 5, "{err}");
        assert_eq!(r["result"]["errors"], 0, "{err}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn resources_are_looked_up_tree_then_environment_then_shipped() {
    let _runners = common::shared();
    let root = fresh("res-order");
    // Each source holds a `variable_words.txt` of its own; the script reports which one it read.
    let script = latte_tree(
        &root,
        r#"pub async fn prepare(ctx) { ctx.data.w = fs::read_resource_lines("variable_words.txt")?; Ok(()) }
pub async fn run(ctx, i) { assert_eq!(ctx.data.w[0], latte::param!("want", "?")); Ok(()) }
"#,
    );
    let env = root.join("env");
    std::fs::create_dir_all(&env).unwrap();
    std::fs::write(env.join("variable_words.txt"), "from_env\n").unwrap();
    let shipped_first = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("resources/variable_words.txt"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let run = |env: Option<&Path>, want: &str| {
        let out = runner_in(&root, env, &["run", script.to_str().unwrap(), "-P", &format!("want={want}"), "-d", "1", "-w", "0", "--no-csv", "-q", "-o", root.join("r.json").to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "want {want}: {}", String::from_utf8_lossy(&out.stderr));
    };
    run(None, &shipped_first); // nothing in the tree or the environment: the runner's own list
    run(Some(&env), "from_env"); // the environment before the shipped list
    std::fs::write(root.join("latte/resources/variable_words.txt"), "from_tree\n").unwrap();
    run(Some(&env), "from_tree"); // the tree's resources/ before the environment
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_missing_resource_names_every_place_looked_and_a_path_outside_is_refused() {
    let _runners = common::shared();
    let root = fresh("res-missing");
    let script = latte_tree(&root, "pub async fn prepare(ctx) { fs::read_resource_lines(latte::param!(\"name\", \"nope.txt\"))?; Ok(()) }\npub async fn run(ctx, i) { Ok(()) }\n");
    let out = runner_in(&root, None, &["run", script.to_str().unwrap(), "-d", "1", "-w", "0", "--no-csv", "-q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    let tree = std::fs::canonicalize(root.join("latte/resources")).unwrap();
    assert!(err.contains("resource nope.txt not found") && err.contains(tree.to_str().unwrap()) && err.contains("variable_words.txt"), "{err}");
    let out = runner_in(&root, None, &["run", script.to_str().unwrap(), "-P", "name=\"../resources/tree_words.txt\"", "-d", "1", "-w", "0", "--no-csv", "-q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("not a relative path inside a resources folder"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}
