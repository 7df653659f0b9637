//! The runner's modules use each other without a cycle, read from src/: a module uses another where its
//! code names it by `crate::…` or `super::…`, or names one of its own child modules (`child::…`). A
//! parent's `pub use child::…` is its facade, not a use, and test modules (`#[cfg(test)] mod`) are left
//! out: they may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path ("" for the crate root, "scripting::bind") → its code without comments and test modules.
fn read_modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            if p.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            if matches!(parts.last().map(String::as_str), Some("main" | "mod")) {
                parts.pop();
            }
            out.insert(parts.join("::"), strip(&std::fs::read_to_string(&p).unwrap()));
        }
    }
    out
}

/// Drops `//` comments and everything from the first `#[cfg(test)]` module on.
fn strip(code: &str) -> String {
    let mut kept = String::new();
    let mut lines = code.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" && lines.peek().is_some_and(|n| n.trim_start().starts_with("mod ")) {
            break;
        }
        kept.push_str(line.split("//").next().unwrap());
        kept.push('\n');
    }
    kept
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths that start at `at`: `a::b::c` gives one, `a::{b, c::d}` one per element.
fn paths_at(code: &str, at: usize) -> Vec<Vec<String>> {
    let mut segs = Vec::new();
    let mut rest = &code[at..];
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            return group[..end]
                .split(',')
                .map(|item| {
                    let mut p = segs.clone();
                    p.extend(item.trim().split("::").map(|s| s.trim().to_string()).filter(|s| !s.is_empty()));
                    p
                })
                .collect();
        }
        let n = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if n == 0 {
            break;
        }
        segs.push(rest[..n].to_string());
        match rest[n..].strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    vec![segs]
}

/// The module a path from `base` lands in: its longest prefix that is a module.
fn resolve(modules: &BTreeMap<String, String>, base: &[String], path: &[String]) -> String {
    let mut full: Vec<String> = base.to_vec();
    full.extend(path.iter().cloned());
    (0..=full.len()).rev().map(|n| full[..n].join("::")).find(|m| modules.contains_key(m)).unwrap_or_default()
}

/// Module → the modules it uses.
fn uses(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges = BTreeMap::new();
    for (name, code) in modules {
        let here: Vec<String> = if name.is_empty() { vec![] } else { name.split("::").map(String::from).collect() };
        let mut to = BTreeSet::new();
        let children: Vec<&str> = code
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pub mod ").or_else(|| l.trim().strip_prefix("mod ")))
            .filter_map(|l| l.strip_suffix(';'))
            .collect();
        for (i, _) in code.match_indices("::") {
            let start = code[..i].rfind(|c: char| !is_ident(c)).map_or(0, |k| k + 1);
            if code[..start].ends_with("::") {
                continue; // the middle of a longer path
            }
            let word = &code[start..i];
            let line_start = code[..start].rfind('\n').map_or(0, |k| k + 1);
            let facade = code[line_start..start].trim() == "pub use";
            let mut base = here.clone();
            let path = match word {
                "crate" => {
                    base.clear();
                    paths_at(code, i + 2)
                }
                "super" => {
                    base.pop();
                    paths_at(code, i + 2)
                }
                w if children.contains(&w) && !facade => paths_at(code, start),
                _ => continue,
            };
            for p in path {
                let m = resolve(modules, &base, &p);
                if m != *name {
                    to.insert(m);
                }
            }
        }
        edges.insert(name.clone(), to);
    }
    edges
}

/// One cycle (first module repeated at the end), or None.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(n: &str, edges: &BTreeMap<String, BTreeSet<String>>, state: &mut BTreeMap<String, u8>, stack: &mut Vec<String>) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m) {
                Some(1) => {
                    let i = stack.iter().position(|s| s == m).unwrap();
                    let mut c = stack[i..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if !state.contains_key(n) {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, edges, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

fn shown(m: &str) -> &str {
    if m.is_empty() { "main" } else { m }
}

#[test]
fn the_reader_sees_each_kind_of_use_and_finds_a_planted_cycle() {
    let mut m = BTreeMap::new();
    m.insert(String::new(), strip("mod a;\nmod b;\nfn main() { a::go(); }\n"));
    m.insert("a".into(), strip("use crate::{b::Thing, b};\npub fn go() {}\n"));
    m.insert("b".into(), strip("pub mod c;\npub use c::Out; // facade\npub struct Thing;\n"));
    m.insert("b::c".into(), strip("use super::Thing;\npub struct Out;\n#[cfg(test)]\nmod tests { use crate::a; }\n"));
    let e = uses(&m);
    assert_eq!(e[""], BTreeSet::from(["a".to_string()]));
    assert_eq!(e["a"], BTreeSet::from(["b".to_string()]));
    assert!(e["b"].is_empty(), "a facade is not a use: {:?}", e["b"]);
    assert_eq!(e["b::c"], BTreeSet::from(["b".to_string()]));
    assert_eq!(find_cycle(&e), None);
    // b calling into its child c, which uses super::Thing: a cycle.
    m.insert("b".into(), strip("pub mod c;\npub fn f() { c::Out; }\npub struct Thing;\n"));
    let c = find_cycle(&uses(&m)).expect("b <-> b::c");
    assert_eq!(c.first(), c.last());
    assert!(c.contains(&"b".to_string()) && c.contains(&"b::c".to_string()), "{c:?}");
}

#[test]
fn modules_use_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = read_modules(&src);
    assert!(modules.contains_key("scripting::bind") && modules.contains_key(""), "{:?}", modules.keys());
    let edges = uses(&modules);
    if std::env::var_os("RUNNER_PRINT_MODULES").is_some() {
        for (m, to) in &edges {
            eprintln!("{} -> {}", shown(m), to.iter().map(|t| shown(t)).collect::<Vec<_>>().join(" "));
        }
    }
    if let Some(c) = find_cycle(&edges) {
        panic!("modules use each other in a circle: {}", c.iter().map(|m| shown(m)).collect::<Vec<_>>().join(" -> "));
    }
}
