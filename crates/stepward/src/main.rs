//! The stepward binary: CLI, configuration and wiring of every component (the composition
//! root). Logic lives in the library crates; this file parses arguments, dispatches, and maps
//! outcomes to exit codes: 0 done, 1 the input is invalid (or a run needs attention), 2 usage
//! or IO error.

#![forbid(unsafe_code)]

mod cli;
mod commands;
mod definitions;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

/// What a command found, mapped to the process exit code by `main`.
pub enum Outcome {
    /// Everything asked for is valid or done.
    Done,
    /// The input was read but is invalid; the command already printed why.
    Invalid,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => commands::check::run(&args),
        Command::Reach(args) => commands::reach::run(&args),
        Command::Schema => commands::schema::run(),
    };
    match result {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Invalid) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
