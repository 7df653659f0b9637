//! The `fs` Rune module: data files read into scripts, and resources (`fs::read_resource_*`).

use std::path::PathBuf;

use rune::{ContextError, Module};

/// A data file: the path as given (relative to the working directory, as Latte reads it), then relative
/// to the workload's folder. A missing file is an `Err` naming both places (Latte's `expect` panics the
/// whole process instead).
fn read_data(path: &str, base: &Option<PathBuf>) -> Result<String, String> {
    let p = PathBuf::from(path);
    let mut tried = vec![p.clone()];
    if let (Some(dir), true) = (base, p.is_relative()) {
        tried.push(dir.join(&p));
    }
    for c in &tried {
        if c.is_file() {
            return std::fs::read_to_string(c).map_err(|e| format!("cannot read {}: {e}", c.display()));
        }
    }
    let looked: Vec<String> = tried.iter().map(|t| t.display().to_string()).collect();
    Err(format!("file {path} not found (looked at: {})", looked.join(", ")))
}

/// Lines as Latte's `BufRead::lines`: empty lines kept, no empty string after a final newline.
pub fn data_lines(s: &str) -> Vec<String> {
    s.lines().map(str::to_string).collect()
}

/// The `fs` module: data files (`fs::read_to_string`, `read_lines`, `read_words`) and resources
/// (`fs::read_resource_*`). Each returns a `Result`, as Latte's (`io::Result`), so `?` works in scripts.
pub fn fs_module(base: Option<PathBuf>) -> Result<Module, ContextError> {
    let mut m = Module::with_crate("fs")?;
    let b = base.clone();
    m.function("read_to_string", move |path: &str| -> Result<String, String> { read_data(path, &b) }).build()?;
    let b = base.clone();
    m.function("read_lines", move |path: &str| -> Result<Vec<String>, String> { read_data(path, &b).map(|s| data_lines(&s)) })
        .build()?;
    let b = base.clone();
    m.function("read_words", move |path: &str| -> Result<Vec<String>, String> { read_data(path, &b).map(|s| resource_words(&s)) })
        .build()?;
    let b = base.clone();
    m.function("read_resource_to_string", move |name: &str| -> Result<String, String> { read_resource(name, &b) }).build()?;
    let b = base.clone();
    m.function("read_resource_lines", move |name: &str| -> Result<Vec<String>, String> {
        read_resource(name, &b).map(|s| resource_lines(&s))
    })
    .build()?;
    m.function("read_resource_words", move |name: &str| -> Result<Vec<String>, String> {
        read_resource(name, &base).map(|s| resource_words(&s))
    })
    .build()?;
    Ok(m)
}

/// Resources the runner ships, under the names Latte 0.29's workloads read (its `sai/orig` tables take
/// their tags from `variable_words.txt`). Our own lists (see `resources/README.md`), not Latte's: a Latte
/// script runs unchanged from any folder, as with Latte, whose resources are built into its binary.
const SHIPPED: &[(&str, &str)] = &[("variable_words.txt", include_str!("../../resources/variable_words.txt"))];

/// Where a resource is looked for, in order: the script's folder; a `resources/` folder in the script's
/// folder or any folder above it (Latte's tree keeps `resources/` beside `workloads/`); `$RUNNER_RESOURCES`.
/// The runner's shipped resources come last (`read_resource`). The walk is bounded by the path's depth.
fn resource_dirs(base: &Option<PathBuf>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(b) = base {
        dirs.push(b.clone());
        // Absolute, so that a relative script path ("w.rn", "../x/w.rn") still walks up to `/`; a
        // script named without a folder has "" as its parent, the working folder.
        let here = if b.as_os_str().is_empty() { PathBuf::from(".") } else { b.clone() };
        let abs = std::fs::canonicalize(&here).unwrap_or(here);
        dirs.extend(abs.ancestors().map(|a| a.join("resources")));
    }
    if let Some(d) = std::env::var_os("RUNNER_RESOURCES").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

/// A resource name is a relative path inside a resources folder: no `..`, no absolute path, so a script
/// reads only what the folders above hold (Latte's embedded lookup cannot leave its folder either).
fn valid_name(name: &str) -> bool {
    let p = std::path::Path::new(name);
    !name.is_empty() && p.components().all(|c| matches!(c, std::path::Component::Normal(_)))
}

fn read_resource(name: &str, base: &Option<PathBuf>) -> Result<String, String> {
    if !valid_name(name) {
        return Err(format!("resource name {name:?} is not a relative path inside a resources folder"));
    }
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
    if let Some((_, text)) = SHIPPED.iter().find(|(n, _)| *n == name) {
        return Ok((*text).to_string());
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let shipped: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
    Err(format!(
        "resource {name} not found (looked in: {}; shipped: {}; set RUNNER_RESOURCES)",
        looked.join(", "),
        shipped.join(", ")
    ))
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
        std::fs::write(&p, "pub fn run() { let l = fs::read_resource_lines(\"names.txt\")?; l[1] }\npub fn missing() { fs::read_resource_lines(\"nope.txt\") }\n").unwrap();
        let prog = crate::scripting::Program::compile(&p, &Default::default()).unwrap();
        let mut vm = rune::Vm::new(prog.runtime.clone(), prog.unit.clone());
        assert_eq!(vm.call(["run"], ()).unwrap().borrow_string_ref().unwrap().as_ref(), "bob");
        let err = vm.call(["missing"], ()).unwrap();
        let err = rune::from_value::<Result<Vec<String>, String>>(err).unwrap().unwrap_err();
        assert!(err.contains("resource nope.txt not found") && err.contains(d.to_str().unwrap()), "{err}");
    }
}
