//! The stepward binary: CLI, configuration and wiring of every component (the composition
//! root). Logic lives in the library crates; this file parses arguments, dispatches, and maps
//! outcomes to exit codes: 0 done, 1 the input is invalid (or a run needs attention), 2 usage
//! or IO error.

#![forbid(unsafe_code)]

// First: its macros are what every module below prints with.
#[macro_use]
mod terminal;
mod app;
mod backend_setup;
mod cli;
mod commands;
mod config;
mod definitions;
mod engine_lock;
mod jail_helper;
mod layout;
mod operator_file;
mod secret_input;
mod server_keys;
mod timings;

use std::process::ExitCode;

use clap::Parser;

use engine::GateDecision;

use crate::cli::{Cli, Command};
use crate::config::Config;

/// What a command found, mapped to the process exit code by `main`.
pub enum Outcome {
    /// Everything asked for is valid or done.
    Done,
    /// The input was read but is invalid; the command already printed why.
    Invalid,
}

/// The first argument that makes this program the sandbox's jail helper. The platform execs
/// itself with it (and an empty environment) so the jail is set up in a fresh, single-threaded
/// process, never in a thread of the platform.
pub const JAIL_HELPER_ARG: &str = "__jail";

/// The first argument that makes this binary the file-tool helper of an agent step: one call
/// from stdin, its reply to stdout, in a fresh process under an unprivileged user
/// (`agent::helper`), never in the platform's.
pub const FILE_TOOL_HELPER_ARG: &str = "__file-tool";

/// `stepward runs list | head`: when the reader of stdout goes away, `println!` panics with
/// std's "failed printing to stdout" message; the command ends there without a panic report,
/// with the exit status a shell gives a process ended by SIGPIPE (128 + 13). The handler for
/// SIGPIPE itself stays ignored (as Rust sets it): a closed socket or a sandbox's closed pipe
/// must be an error to handle, never the end of the process.
fn end_quietly_on_a_closed_stdout() {
    let scrubbed_report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout")
            && message.contains(
                &std::io::Error::from_raw_os_error(rustix::io::Errno::PIPE.raw_os_error())
                    .to_string(),
            )
        {
            std::process::exit(141);
        }
        scrubbed_report(info);
    }));
}

fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == JAIL_HELPER_ARG)
    {
        sandbox::jail::jail_main();
    }
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == FILE_TOOL_HELPER_ARG)
    {
        let code =
            agent::helper::serve(&mut std::io::stdin().lock(), &mut std::io::stdout().lock());
        return ExitCode::from(u8::try_from(code).unwrap_or(2));
    }
    let scrub_registry = redact::ScrubRegistry::new();
    redact::install_panic_hook(scrub_registry.clone());
    end_quietly_on_a_closed_stdout();
    let started = std::sync::Arc::new(timings::Timings::new(false));
    let cli = Cli::parse();
    let timings = if cli.global.startup_timings {
        std::sync::Arc::new(timings::Timings::new(true))
    } else {
        started
    };
    timings.mark("arguments");
    let mut config = Config::from_args(&cli.global, scrub_registry.clone(), timings.clone());
    if let Err(error) = config.read_operator_file(cli.global.operator_config.as_deref()) {
        errln!("error: {error:#}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        Command::Check(args) => commands::check::run(&args, &config),
        Command::Reach(args) => commands::reach::run(&args, &config),
        Command::Schema => commands::schema::run(&config),
        Command::Run(args) => commands::run::run(&args, config),
        Command::Runs(command) => commands::runs::run(&command, config),
        Command::Approve(args) => commands::decide::run(&args, GateDecision::Approve, config),
        Command::Reject(args) => commands::decide::run(&args, GateDecision::Reject, config),
        Command::Secrets(command) => commands::vault::secrets(&command, config),
        Command::Connections(command) => commands::vault::connections(&command, config),
        Command::Files(command) => commands::files::run(&command, config),
        Command::Workflows(command) => commands::workflows::run(&command, config),
        Command::Keys(command) => commands::vault::keys(&command, config),
        Command::Audit(command) => commands::audit::run(&command, config),
        Command::Serve(args) => commands::serve::run(&args, config),
        Command::Worker(args) => commands::worker::run(&args, config),
        Command::Accounts(command) => commands::accounts::run(&command, config),
        Command::Models(command) => commands::models::run(&command, config),
        Command::Tools(command) => commands::tools::run(&command, config),
        Command::Dev(command) => commands::models::dev(&command),
        Command::Repair(args) => commands::repair::run(&args, config),
        Command::Interview(args) => commands::interview::run(&args, config),
    };
    timings.mark("the command, with its teardown");
    match result {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Invalid) => ExitCode::from(1),
        Err(error) => {
            errln!("error: {}", scrub_registry.scrub(&format!("{error:#}")));
            ExitCode::from(2)
        }
    }
}
