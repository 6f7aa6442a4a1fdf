//! The command line, declared with clap's derive API.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Runs workflows written by an AI assistant, each step in a fresh, hardened sandbox.
#[derive(Debug, Parser)]
#[command(name = "stepward", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check workflow files (`*.yaml`) and agent files (`AGENT.md`): exit 0 if all are valid,
    /// 1 if any is invalid, 2 on a usage or IO error.
    Check(CheckArgs),
    /// Show what each step of a workflow is permitted to reach.
    Reach(ReachArgs),
    /// Print the JSON Schema of the workflow format, for editors with a YAML language server.
    Schema,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The files to check.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print the diagnostics as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReachArgs {
    /// The workflow file.
    pub file: PathBuf,
    /// Where agent folders live (`<dir>/<name>/AGENT.md`); by default the `agents` folder
    /// beside the workflow's folder, as in a workspace.
    #[arg(long)]
    pub agents: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}
