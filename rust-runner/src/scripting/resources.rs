//! The `fs` Rune module: data files read into scripts.

use std::path::PathBuf;

use rune::runtime::VmResult;
use rune::{ContextError, Module};

/// Files are looked up relative to the working directory, then to the workload's folder.
fn resolve(path: &str, base: &Option<PathBuf>) -> PathBuf {
    let p = PathBuf::from(path);
    match base {
        Some(dir) if !p.exists() && p.is_relative() => dir.join(p),
        _ => p,
    }
}

/// The `fs` module: reading data files into scripts (`fs::read_lines`, `read_words`, `read_to_string`).
pub fn fs_module(base: Option<PathBuf>) -> Result<Module, ContextError> {
    let mut m = Module::with_crate("fs")?;
    let b1 = base.clone();
    m.function("read_to_string", move |path: &str| -> VmResult<String> {
        match std::fs::read_to_string(resolve(path, &b1)) {
            Ok(s) => VmResult::Ok(s),
            Err(e) => VmResult::panic(format!("cannot read {path}: {e}")),
        }
    })
    .build()?;
    let b2 = base.clone();
    m.function("read_lines", move |path: &str| -> VmResult<Vec<String>> {
        match std::fs::read_to_string(resolve(path, &b2)) {
            Ok(s) => VmResult::Ok(s.lines().filter(|l| !l.is_empty()).map(str::to_string).collect()),
            Err(e) => VmResult::panic(format!("cannot read {path}: {e}")),
        }
    })
    .build()?;
    m.function("read_words", move |path: &str| -> VmResult<Vec<String>> {
        match std::fs::read_to_string(resolve(path, &base)) {
            Ok(s) => VmResult::Ok(s.split_whitespace().map(str::to_string).collect()),
            Err(e) => VmResult::panic(format!("cannot read {path}: {e}")),
        }
    })
    .build()?;
    Ok(m)
}
