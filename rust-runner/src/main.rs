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

use std::process::ExitCode;

use clap::Parser;

use crate::config::{Cli, Command};
use crate::error::{failed, input, Fail};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Schema(a) => run::cmd_once(&a, "schema", false),
        Command::Erase { script, if_defined } => run::cmd_once(&script, "erase", if_defined),
        Command::Load(a) => run::cmd_run(&a, "load"),
        Command::Run(a) => run::cmd_run(&a, "run"),
        Command::Show { report, baseline } => report::show(&report, baseline.as_deref()).map_err(|e| input(format!("{e:#}"))),
        Command::List { dir } => report::list(&dir).map_err(failed),
        Command::Hdr { report, output } => report::hdr(&report, output.as_deref()).map_err(|e| input(format!("{e:#}"))),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail(code, msg)) => {
            eprintln!("runner: {msg}");
            ExitCode::from(code)
        }
    }
}
