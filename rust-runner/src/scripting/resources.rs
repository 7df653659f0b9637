//! The `fs` Rune module: data files read into scripts, and resources (`fs::read_resource_*`).

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
    let b3 = base.clone();
    m.function("read_words", move |path: &str| -> VmResult<Vec<String>> {
        match std::fs::read_to_string(resolve(path, &b3)) {
            Ok(s) => VmResult::Ok(s.split_whitespace().map(str::to_string).collect()),
            Err(e) => VmResult::panic(format!("cannot read {path}: {e}")),
        }
    })
    .build()?;
    let r1 = base.clone();
    m.function("read_resource_to_string", move |name: &str| -> VmResult<String> { vm(read_resource(name, &r1)) })
        .build()?;
    let r2 = base.clone();
    m.function("read_resource_lines", move |name: &str| -> VmResult<Vec<String>> {
        vm(read_resource(name, &r2).map(|s| resource_lines(&s)))
    })
    .build()?;
    m.function("read_resource_words", move |name: &str| -> VmResult<Vec<String>> {
        vm(read_resource(name, &base).map(|s| resource_words(&s)))
    })
    .build()?;
    Ok(m)
}

/// Where resources come from, in order: the workload's folder, then `$RUNNER_RESOURCES`. Latte embeds its
/// own data files in its binary; the runner ships none, so a Latte script's resources are put beside it
/// (or in a folder named by `RUNNER_RESOURCES`).
fn resource_dirs(base: &Option<PathBuf>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = base.iter().cloned().collect();
    if let Some(d) = std::env::var_os("RUNNER_RESOURCES").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

/// A script-visible failure (the cycle, or the compile-time `prepare`, fails with this message).
fn vm<T>(r: Result<T, String>) -> VmResult<T> {
    match r {
        Ok(v) => VmResult::Ok(v),
        Err(e) => VmResult::panic(e),
    }
}

fn read_resource(name: &str, base: &Option<PathBuf>) -> Result<String, String> {
    let dirs = resource_dirs(base);
    for dir in &dirs {
        let p = dir.join(name);
        if p.is_file() {
            return match std::fs::read_to_string(&p) {
                Ok(s) => Ok(s),
                Err(e) => Err(format!("cannot read resource {}: {e}", p.display())),
            };
        }
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(format!("resource {name} not found (looked in: {}; set RUNNER_RESOURCES)", looked.join(", ")))
}

/// Every line, empty ones kept (Latte splits on '\n'); unlike Latte, no empty string after a final newline.
pub fn resource_lines(s: &str) -> Vec<String> {
    s.lines().map(str::to_string).collect()
}

/// Runs of letters (Latte's word boundary); unlike Latte, no empty strings between two separators.
pub fn resource_words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_lines_and_words() {
        assert_eq!(resource_lines("a b\n\nc\n"), ["a b", "", "c"]);
        assert_eq!(resource_words("it's 2 words,  here\n"), ["it", "s", "words", "here"]);
    }

    #[test]
    fn resources_come_from_the_script_folder() {
        let d = std::env::temp_dir().join(format!("runner-res-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("names.txt"), "ann\nbob\n").unwrap();
        let p = d.join("w.rn");
        std::fs::write(&p, "pub fn run() { let l = fs::read_resource_lines(\"names.txt\"); l[1] }\npub fn missing() { fs::read_resource_lines(\"nope.txt\") }\n").unwrap();
        let prog = crate::scripting::Program::compile(&p, &Default::default()).unwrap();
        let mut vm = rune::Vm::new(prog.runtime.clone(), prog.unit.clone());
        assert_eq!(vm.call(["run"], ()).unwrap().borrow_string_ref().unwrap().as_ref(), "bob");
        let err = vm.call(["missing"], ()).unwrap_err().to_string();
        assert!(err.contains("resource nope.txt not found"), "{err}");
    }
}
