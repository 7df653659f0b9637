//! Compiling a workload script (and the `lib.rn` beside it) into a Rune unit, and handing out the
//! compiled program to workers either shared (one set of `Arc`s) or as per-worker deep copies.

pub mod bind;
pub mod context;
pub mod cql_types;
pub mod deadline;
pub mod functions;
pub mod resources;
pub mod routing;
pub mod rows;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rune::alloc::clone::TryClone;
use rune::ast::Spanned;
use rune::diagnostics::{Diagnostic, FatalDiagnosticKind};
use rune::macros::{quote, MacroContext, TokenStream};
use rune::parse::Parser;
use rune::runtime::{RuntimeContext, Unit};
use rune::termcolor::{ColorChoice, StandardStream};
use rune::{ast, Diagnostics, Hash, Source, Sources};

/// How workers get the compiled program (the knob of seed 000).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum Sharing {
    /// One `Arc<Unit>` / `Arc<RuntimeContext>` for every worker: their reference counts are shared.
    #[value(alias = "shared-arc")]
    Shared,
    /// Each worker gets its own deep copy (`try_clone`), so nothing written per call is shared.
    PerThread,
}

impl Sharing {
    /// The lab's variant name for this mode (matches reference/published.csv).
    pub fn variant(self) -> &'static str {
        match self {
            Sharing::Shared => "shared-arc",
            Sharing::PerThread => "per-thread",
        }
    }
}

pub struct Program {
    pub unit: Arc<Unit>,
    pub runtime: Arc<RuntimeContext>,
    /// Whether a call may wait on a future (`mentions_await`); when not, each call runs
    /// in place in the worker's loop, without a future (exec::call::Calls::call_now).
    pub may_await: bool,
}

/// The compiled sources and their text (rune keeps the text private), by source id.
pub struct Scripts {
    sources: Sources,
    texts: Vec<(rune::SourceId, String)>,
}

/// The sources of the program this process compiled last: what `describe_error` reads, so that the
/// workers need nothing more than the error to name its place (the runner compiles one script).
static LAST_SOURCES: std::sync::Mutex<Option<Arc<Scripts>>> = std::sync::Mutex::new(None);

/// A runtime error of a script as "file:line:column: error: MESSAGE (in fn NAME)" plus the callers,
/// using the debug info of the unit it happened in (rune records the instruction pointer).
pub fn describe_error(e: &rune::runtime::VmError) -> String {
    let sources = LAST_SOURCES.lock().ok().and_then(|g| g.clone());
    match sources {
        Some(s) => describe_with(&s, e),
        None => e.to_string(),
    }
}

/// Where instruction `ip` of `unit` comes from: ("file:line:column", "fn name(args)", the line's text).
fn place(scripts: &Scripts, unit: &Unit, ip: usize) -> Option<(String, String, String)> {
    let sources = &scripts.sources;
    let debug = unit.debug_info()?;
    let inst = debug.instruction_at(ip)?;
    let source = sources.get(inst.source_id)?;
    let (line, col) = source.pos_to_utf8_linecol(inst.span.start.into_usize());
    let file = source.path().map(|p| p.display().to_string()).unwrap_or_else(|| source.name().to_string());
    // The function whose first instruction is the closest at or before `ip`.
    let func = debug
        .functions_rev
        .iter()
        .filter(|(start, _)| **start <= ip)
        .max_by_key(|(start, _)| **start)
        .and_then(|(_, h)| debug.functions.get(h))
        .map(|sig| sig.to_string())
        .unwrap_or_else(|| "?".into());
    let text = scripts.texts.iter().find(|(id, _)| *id == inst.source_id).map(|(_, t)| t.as_str()).unwrap_or("");
    let text = text.lines().nth(line).unwrap_or("").trim_end();
    Some((format!("{file}:{}:{}", line + 1, col + 1), func, format!("{:>5} | {text}", line + 1)))
}

fn describe_with(sources: &Scripts, e: &rune::runtime::VmError) -> String {
    let msg = e.to_string();
    let Some(loc) = e.first_location() else { return msg };
    let Some((at, func, text)) = place(sources, &loc.unit, loc.ip) else { return msg };
    let mut out = format!("{at}: error: {msg} (in fn {func})\n{text}");
    // Callers, innermost first; a frame keeps the instruction after its call.
    for frame in loc.frames.iter().rev() {
        let caller = place(sources, &loc.unit, frame.ip.saturating_sub(1)).or_else(|| place(sources, &loc.unit, frame.ip));
        if let Some((at, func, _)) = caller {
            out.push_str(&format!("\n    called from {at} (in fn {func})"));
        }
    }
    out
}

/// A compile failure, already printed with file:line:column.
#[derive(Debug)]
pub struct CompileFailed(pub String);

impl std::fmt::Display for CompileFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for CompileFailed {}

impl Program {
    /// Compiles `path` with the `latte`, `fs` and context modules; `params` feeds `latte::param!`.
    /// Runs on a thread with a COMPILE_STACK stack, after the text passed the nesting check.
    pub fn compile(path: &Path, params: &HashMap<String, String>) -> Result<Program, CompileFailed> {
        std::thread::scope(|s| {
            let t = std::thread::Builder::new().name("compile".into()).stack_size(COMPILE_STACK);
            let h = t.spawn_scoped(s, || Program::compile_here(path, params)).map_err(|e| CompileFailed(e.to_string()))?;
            h.join().unwrap_or_else(|_| Err(CompileFailed("the compiler panicked".into())))
        })
    }

    fn compile_here(path: &Path, params: &HashMap<String, String>) -> Result<Program, CompileFailed> {
        let fail = |m: String| CompileFailed(m);
        for (name, value) in params.iter().filter(|(_, v)| looks_like_code(v)) {
            check_nesting(&format!("-P {name}"), value).map_err(fail)?;
        }
        // `-P` values that look like code are parsed into the script by `latte::param!`
        let params_await = params.values().any(|v| mentions_await(v));
        let base = path.parent().map(Path::to_path_buf);
        let mut context = rune::Context::with_default_modules().map_err(|e| fail(e.to_string()))?;
        let mut latte = crate::scripting::functions::latte_module().map_err(|e| fail(e.to_string()))?;
        let params = Arc::new(params.clone());
        latte
            .macro_(["param"], move |cx, stream| param_macro(cx, stream, &params))
            .map_err(|e| fail(e.to_string()))?;
        crate::scripting::context::install(&mut latte).map_err(|e| fail(e.to_string()))?;
        context.install(latte).map_err(|e| fail(e.to_string()))?;
        context
            .install(crate::scripting::resources::fs_module(base.clone()).map_err(|e| fail(e.to_string()))?)
            .map_err(|e| fail(e.to_string()))?;

        let mut sources = Sources::new();
        let mut texts = Vec::new();
        let mut add = |p: &Path| -> Result<(), CompileFailed> {
            let text = std::fs::read_to_string(p).map_err(|e| fail(format!("{}: {e}", p.display())))?;
            check_nesting(&p.display().to_string(), &text).map_err(fail)?;
            let source = Source::with_path(p.display().to_string(), &text, p).map_err(|e| fail(e.to_string()))?;
            let id = sources.insert(source).map_err(|e| fail(e.to_string()))?;
            texts.push((id, text));
            Ok(())
        };
        add(path)?;
        // Latte loads a `lib.rn` that sits beside the workload: shared helpers for a family of scripts.
        if let Some(lib) = base.as_ref().map(|b| b.join("lib.rn")).filter(|l| l.is_file() && l != path) {
            add(&lib)?;
        }

        let mut diagnostics = Diagnostics::new();
        let result = rune::prepare(&mut sources)
            .with_context(&context)
            .with_diagnostics(&mut diagnostics)
            .build();
        if diagnostics.has_error() || result.is_err() {
            let mut msgs = Vec::new();
            for d in diagnostics.diagnostics() {
                if let Diagnostic::Fatal(f) = d {
                    msgs.push(locate(&sources, f.source_id(), f.kind()));
                }
            }
            for m in &msgs {
                eprintln!("{m}");
            }
            let mut err = StandardStream::stderr(ColorChoice::Auto);
            let _ = diagnostics.emit(&mut err, &sources);
            let first = msgs.into_iter().next().unwrap_or_else(|| format!("{}: compile error", path.display()));
            return Err(fail(first));
        }
        if diagnostics.has_warning() {
            let mut err = StandardStream::stderr(ColorChoice::Auto);
            let _ = diagnostics.emit(&mut err, &sources);
        }
        let unit = result.map_err(|e| fail(e.to_string()))?;
        let runtime = context.runtime().map_err(|e| fail(e.to_string()))?;
        // A source the compiler loaded itself (a `mod name;` file) is one whose text we did not read:
        // its calls may wait, for all we know.
        let compiled = (0u32..).take_while(|&i| sources.get(rune::SourceId::new(i)).is_some()).count();
        let may_await = params_await || compiled != texts.len() || texts.iter().any(|(_, t)| mentions_await(t));
        let sources = Arc::new(Scripts { sources, texts });
        if let Ok(mut g) = LAST_SOURCES.lock() {
            *g = Some(sources.clone());
        }
        Ok(Program { unit: Arc::new(unit), runtime: Arc::new(runtime), may_await })
    }

    pub fn has_function(&self, name: &str) -> bool {
        rune::Vm::new(self.runtime.clone(), self.unit.clone()).lookup_function(Hash::type_hash([name])).is_ok()
    }
}

/// The unit and runtime context a worker uses: the same `Arc`s, or deep copies with their own counts.
/// Call it on the worker's own thread, after pinning: a copy is then in that thread's allocator arena
/// (and on its NUMA node), so the reference counts every call updates are on cache lines no other
/// worker writes. Made on the main thread one after the other, two workers' counts shared lines, and
/// two `per-thread` workers ran ×1.35 one worker's calls/s where two processes ran ×2.0.
pub fn for_worker(unit: &Arc<Unit>, runtime: &Arc<RuntimeContext>, sharing: Sharing) -> anyhow::Result<(Arc<Unit>, Arc<RuntimeContext>)> {
    Ok(match sharing {
        Sharing::Shared => (unit.clone(), runtime.clone()),
        Sharing::PerThread => (Arc::new(unit.as_ref().try_clone()?), Arc::new(runtime.as_ref().try_clone()?)),
    })
}

/// Whether a text could make a call wait: the words `await` or `select` anywhere in it (code, comment
/// or string); a program may wait when any of its sources or `-P` values could. Rune's only instructions that wait on a future (`Await`, `Select`) come from these two
/// keywords, and the macros a script can use here (`latte::param!`, Rune's std) expand to neither, so
/// sources and `-P` values without the words compile to calls that never wait. The word in a comment
/// or a string only sends the calls the general way.
fn mentions_await(text: &str) -> bool {
    text.contains("await") || text.contains("select")
}

/// "file:line:column: error: message" for one fatal diagnostic.
fn locate(sources: &Sources, id: rune::SourceId, kind: &FatalDiagnosticKind) -> String {
    let source = sources.get(id);
    let name = source
        .and_then(|s| s.path().map(|p| p.display().to_string()))
        .or_else(|| source.map(|s| s.name().to_string()))
        .unwrap_or_else(|| "<script>".into());
    match kind {
        FatalDiagnosticKind::CompileError(e) => {
            let (line, col) = source.map(|s| s.pos_to_utf8_linecol(e.span().start.into_usize())).unwrap_or((0, 0));
            format!("{name}:{}:{}: error: {e}", line + 1, col + 1)
        }
        other => format!("{name}: error: {other}"),
    }
}

/// `latte::param!("name", default)`: the value given with `-P name=value`, else the default.
/// A value that reads as a number, bool or quoted/bracketed literal is Rune code; anything else is a string.
fn param_macro(
    cx: &mut MacroContext<'_, '_, '_>,
    stream: &TokenStream,
    params: &HashMap<String, String>,
) -> rune::compile::Result<TokenStream> {
    let mut p = Parser::from_token_stream(stream, cx.input_span());
    let name = p.parse::<ast::LitStr>()?;
    let name = cx.resolve(name)?.to_string();
    let _comma = p.parse::<ast::Comma>()?;
    let default = p.parse::<ast::Expr>()?;
    p.eof()?;
    match params.get(&name) {
        None => Ok(quote!(#default).into_token_stream(cx)?),
        Some(value) if looks_like_code(value) => {
            let id = cx.insert_source(&name, value)?;
            let expr = cx.parse_source::<ast::Expr>(id)?;
            Ok(quote!(#expr).into_token_stream(cx)?)
        }
        Some(value) => {
            let lit = cx.lit(value.as_str())?;
            Ok(quote!(#lit).into_token_stream(cx)?)
        }
    }
}

pub fn looks_like_code(v: &str) -> bool {
    let v = v.trim();
    v.parse::<i64>().is_ok()
        || v.parse::<f64>().is_ok()
        || v == "true"
        || v == "false"
        || v.starts_with(['"', '[', '(', '#', '\''])
}


/// Deepest an expression may nest (brackets, plus operators chained in one expression), checked on the
/// text before the compiler sees it: rune's parser and compiler recurse once per level (~3 KB of stack
/// each here), so 100,000 nested parentheses or `!!!…` would overflow any stack and abort. Scripts in
/// use nest a few dozen levels; the compile runs on a thread with a `COMPILE_STACK` stack, which holds
/// more than 10× this depth.
pub const MAX_NESTING: usize = 1000;

/// The compiler thread's stack (see MAX_NESTING).
const COMPILE_STACK: usize = 64 << 20;

/// Refuses text nesting deeper than MAX_NESTING, with "name:line:column". Strings, characters and
/// comments are skipped; a template string's `${…}` is code. Each open bracket is a level, and so is
/// each operator since the last `,` or `;` at that level (a chain `1+1+…` nests as deep as it is long).
pub fn check_nesting(name: &str, text: &str) -> Result<(), String> {
    #[derive(PartialEq)]
    enum Frame {
        Bracket,
        Template,
        Interp,
    }
    let b = text.as_bytes();
    // Each frame with the operators counted in it; `total` = frames + operators (a frame's own level).
    let mut frames: Vec<(Frame, usize)> = vec![(Frame::Bracket, 0)];
    let mut total = 1usize;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if frames.last().is_some_and(|f| f.0 == Frame::Template) {
            match c {
                b'\\' => i += 1,
                b'`' => {
                    frames.pop();
                    total -= 1;
                }
                b'$' if b.get(i + 1) == Some(&b'{') => {
                    frames.push((Frame::Interp, 0));
                    total += 1;
                    i += 1;
                }
                _ => {}
            }
            i += 1;
            continue;
        }
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            // A character ('x', '\n', '\u{1F600}'); a label ('outer:) has no closing quote nearby.
            b'\'' => {
                if b.get(i + 1) == Some(&b'\\') {
                    while i + 1 < b.len() && b[i + 1] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                } else if let Some(end) = b.get(i + 1..(i + 6).min(b.len())).and_then(|w| w.iter().skip(1).position(|&x| x == b'\'')) {
                    i += end + 2;
                }
            }
            b'`' => {
                frames.push((Frame::Template, 0));
                total += 1;
            }
            b'(' | b'[' | b'{' => {
                frames.push((Frame::Bracket, 0));
                total += 1;
            }
            b')' | b']' | b'}' => {
                if frames.len() > 1 {
                    let (_, ops) = frames.pop().unwrap_or((Frame::Bracket, 0));
                    total -= 1 + ops;
                }
            }
            b',' | b';' => {
                if let Some(top) = frames.last_mut() {
                    total -= top.1;
                    top.1 = 0;
                }
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'!' | b'&' | b'|' | b'^' | b'<' | b'>' | b'=' | b'.' | b'?' => {
                if let Some(top) = frames.last_mut() {
                    top.1 += 1;
                    total += 1;
                }
            }
            _ => {}
        }
        if total > MAX_NESTING {
            let at = i.min(b.len());
            let before = &text[..text.floor_char_boundary_compat(at)];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
            return Err(format!(
                "{name}:{line}:{col}: error: nested more than {MAX_NESTING} levels deep (brackets and chained operators); the compiler would overflow its stack"
            ));
        }
        i += 1;
    }
    Ok(())
}

/// `str::floor_char_boundary` (unstable): the largest char boundary at or below `at`.
trait FloorBoundary {
    fn floor_char_boundary_compat(&self, at: usize) -> usize;
}

impl FloorBoundary for str {
    fn floor_char_boundary_compat(&self, at: usize) -> usize {
        let mut at = at.min(self.len());
        while !self.is_char_boundary(at) {
            at -= 1;
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("runner-test-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn nesting_is_counted_in_code_only() {
        let deep = format!("let x = {}1{};", "(".repeat(2000), ")".repeat(2000));
        let e = check_nesting("s.rn", &format!("pub fn run(ctx, i) {{\n    {deep}\n}}")).unwrap_err();
        assert!(e.starts_with("s.rn:2:"), "{e}");
        assert!(check_nesting("s.rn", &format!("fn f() {{ {} }}", "!".repeat(5000))).is_err());
        assert!(check_nesting("s.rn", &format!("fn f() {{ 1{} }}", "+1".repeat(5000))).is_err());
        // Brackets and operators in strings, characters and comments are text; `${…}` is code.
        let text = format!("fn f() {{ \"{0}\"; '('; // {0}\n /* {0} */ `{0}` }}", "((-".repeat(2000));
        assert_eq!(check_nesting("s.rn", &text), Ok(()));
        assert!(check_nesting("s.rn", &format!("fn f() {{ `${{{}1{}}}` }}", "(".repeat(2000), ")".repeat(2000))).is_err());
        // A long list is wide, not deep.
        let list = format!("fn f() {{ [{}] }}", "1 + 1, ".repeat(100_000));
        assert_eq!(check_nesting("s.rn", &list), Ok(()));
        for w in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../workloads")).unwrap() {
            let p = w.unwrap().path();
            if p.extension().is_some_and(|e| e == "rn") {
                assert_eq!(check_nesting("w", &std::fs::read_to_string(&p).unwrap()), Ok(()), "{}", p.display());
            }
        }
    }

    #[test]
    fn params_override_defaults() {
        let d = tmpdir("params");
        let p = write(&d, "w.rn", r#"
            const ROWS = latte::param!("rows", 10);
            const NAME = latte::param!("name", "a");
            pub fn rows() { ROWS }
            pub fn name() { NAME }
        "#);
        let call = |prog: &Program, f: &str| {
            let mut vm = rune::Vm::new(prog.runtime.clone(), prog.unit.clone());
            vm.call([f], ()).unwrap()
        };
        let prog = Program::compile(&p, &HashMap::new()).unwrap();
        assert_eq!(call(&prog, "rows").as_integer::<i64>().unwrap(), 10);
        let params = HashMap::from([("rows".to_string(), "42".to_string()), ("name".to_string(), "xyz".to_string())]);
        let prog = Program::compile(&p, &params).unwrap();
        assert_eq!(call(&prog, "rows").as_integer::<i64>().unwrap(), 42);
        assert_eq!(call(&prog, "name").borrow_string_ref().unwrap().as_ref(), "xyz");
    }

    #[test]
    fn compile_errors_name_file_line_and_column() {
        let d = tmpdir("broken");
        let p = write(&d, "broken.rn", "pub async fn run(ctx, i) {\n    let x = ;\n}\n");
        let err = Program::compile(&p, &HashMap::new()).err().unwrap();
        assert!(err.0.contains("broken.rn:2:"), "{}", err.0);
    }

    #[test]
    fn lib_rn_is_loaded_beside_the_script() {
        let d = tmpdir("lib");
        write(&d, "lib.rn", "pub fn helper() { 7 }\n");
        let p = write(&d, "w.rn", "pub fn run() { helper() * 6 }\n");
        let prog = Program::compile(&p, &HashMap::new()).unwrap();
        let mut vm = rune::Vm::new(prog.runtime.clone(), prog.unit.clone());
        assert_eq!(vm.call(["run"], ()).unwrap().as_integer::<i64>().unwrap(), 42);
    }

    #[test]
    fn a_program_may_await_when_any_of_its_texts_could() {
        let d = tmpdir("await");
        let none = HashMap::new();
        let may = |name: &str, text: &str, params: &HashMap<String, String>| {
            Program::compile(&write(&d, name, text), params).unwrap().may_await
        };
        assert!(!may("empty.rn", "pub async fn run(ctx, i) {\n}\n", &none));
        assert!(may("awaits.rn", "async fn f() {}\npub async fn run(ctx, i) { f().await }\n", &none));
        // a word in a comment or a string is enough: only the fast path is lost
        assert!(may("comment.rn", "// no await here\npub async fn run(ctx, i) {}\n", &none));
        assert!(may("string.rn", "pub fn run(ctx, i) { \"select\" }\n", &none));
        // a -P value is parsed into the script by latte::param!
        let p = HashMap::from([("x".to_string(), "f().await".to_string())]);
        assert!(may("param.rn", "pub fn run(ctx, i) {}\n", &p));
        // lib.rn beside the script is read by the runner, so its words count
        let l = tmpdir("await-lib");
        write(&l, "lib.rn", "pub async fn g() { 1 }\npub async fn h() { g().await }\n");
        assert!(Program::compile(&write(&l, "w.rn", "pub fn run(ctx, i) {}\n"), &none).unwrap().may_await);
        // a `mod` file is loaded by the compiler, not by the runner: its text is not read, so it may wait
        let m = tmpdir("await-mod");
        write(&m, "helper.rn", "pub fn one() { 1 }\n");
        assert!(Program::compile(&write(&m, "w.rn", "mod helper;\npub fn run(ctx, i) { helper::one() }\n"), &none).unwrap().may_await);
    }

    #[test]
    fn per_thread_copies_are_distinct() {
        let d = tmpdir("share");
        let p = write(&d, "w.rn", "pub fn run() { 1 }\n");
        let prog = Program::compile(&p, &HashMap::new()).unwrap();
        let (u1, _) = for_worker(&prog.unit, &prog.runtime, Sharing::Shared).unwrap();
        assert!(Arc::ptr_eq(&u1, &prog.unit));
        let (u2, _) = for_worker(&prog.unit, &prog.runtime, Sharing::PerThread).unwrap();
        assert!(!Arc::ptr_eq(&u2, &prog.unit));
    }
}
