//! `runner`: a Cassandra benchmarking client whose workloads are Rune scripts (Latte-compatible).
//! See README.md for the commands and the script API. This file only dispatches the command line
//! (config.rs) to the commands (run.rs, report/) and turns their failure into an exit code.

mod alloc;
mod config;
mod corun;
mod error;
mod exec;
mod run;
mod report;
mod scripting;
mod stats;
mod sys;
mod watchdog;

use std::process::ExitCode;

use clap::Parser;

use crate::config::{Cli, Command};
use crate::error::{failed, input, Fail};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Script code runs on this thread too (schema, erase, prepare): it gets a stack sized for the
    // script's stack budget, as the workers do (alloc::guard_stack).
    let budget = match &cli.command {
        Command::Schema(a) | Command::Erase { script: a, .. } => a.script_stack,
        Command::Load(a) | Command::Run(a) => a.script.script_stack,
        _ => 1 << 20,
    };
    let thread = std::thread::Builder::new()
        .name("command".into())
        .stack_size(alloc::script_thread_stack(budget))
        .spawn(move || dispatch(cli));
    let r = match thread.map(|t| t.join()) {
        Ok(Ok(r)) => r,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(e) => Err(failed(format!("cannot start the command's thread: {e}"))),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail(code, msg)) => {
            eprintln!("runner: {msg}");
            ExitCode::from(code)
        }
    }
}

fn dispatch(cli: Cli) -> Result<(), Fail> {
    match cli.command {
        Command::Schema(a) => run::cmd_once(&a, "schema", false),
        Command::Erase { script, if_defined } => run::cmd_once(&script, "erase", if_defined),
        Command::Load(a) => run::cmd_run(&a, "load"),
        Command::Run(a) => run::cmd_run(&a, "run"),
        Command::Show { report, baseline } => report::show(&report, baseline.as_deref()).map_err(|e| input(format!("{e:#}"))),
        Command::List { dir } => report::list(&dir).map_err(failed),
        Command::Hdr { report, output } => report::hdr(&report, output.as_deref()).map_err(|e| input(format!("{e:#}"))),
    }
}
