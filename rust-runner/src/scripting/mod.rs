//! Compiling a workload script (and the `lib.rn` beside it) into a Rune unit, and handing out the
//! compiled program to workers either shared (one set of `Arc`s) or as per-worker deep copies.

pub mod bind;
pub mod context;
pub mod functions;
pub mod resources;

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
    pub fn compile(path: &Path, params: &HashMap<String, String>) -> Result<Program, CompileFailed> {
        let fail = |m: String| CompileFailed(m);
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
        let source = Source::from_path(path).map_err(|e| fail(format!("{}: {e}", path.display())))?;
        sources.insert(source).map_err(|e| fail(e.to_string()))?;
        // Latte loads a `lib.rn` that sits beside the workload: shared helpers for a family of scripts.
        if let Some(lib) = base.as_ref().map(|b| b.join("lib.rn")).filter(|l| l.is_file() && l != path) {
            let source = Source::from_path(&lib).map_err(|e| fail(format!("{}: {e}", lib.display())))?;
            sources.insert(source).map_err(|e| fail(e.to_string()))?;
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
        Ok(Program { unit: Arc::new(unit), runtime: Arc::new(runtime) })
    }

    pub fn has_function(&self, name: &str) -> bool {
        rune::Vm::new(self.runtime.clone(), self.unit.clone()).lookup_function(Hash::type_hash([name])).is_ok()
    }

    /// The unit and runtime context a worker uses: the same `Arc`s, or deep copies with their own counts.
    pub fn for_worker(&self, sharing: Sharing) -> anyhow::Result<(Arc<Unit>, Arc<RuntimeContext>)> {
        Ok(match sharing {
            Sharing::Shared => (self.unit.clone(), self.runtime.clone()),
            Sharing::PerThread => (Arc::new(self.unit.as_ref().try_clone()?), Arc::new(self.runtime.as_ref().try_clone()?)),
        })
    }
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
    fn per_thread_copies_are_distinct() {
        let d = tmpdir("share");
        let p = write(&d, "w.rn", "pub fn run() { 1 }\n");
        let prog = Program::compile(&p, &HashMap::new()).unwrap();
        let (u1, _) = prog.for_worker(Sharing::Shared).unwrap();
        assert!(Arc::ptr_eq(&u1, &prog.unit));
        let (u2, _) = prog.for_worker(Sharing::PerThread).unwrap();
        assert!(!Arc::ptr_eq(&u2, &prog.unit));
    }
}
