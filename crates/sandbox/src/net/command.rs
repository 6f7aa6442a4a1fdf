//! Running `nft` in the host's (or a given) network namespace: only to load the policy once,
//! when a backend starts. Nothing per sandbox runs a command.
//!
//! Commands are found in the system directories only (never through `PATH`), run with an empty
//! environment, and their failures carry the whole command line and its stderr.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::net::error::Error;

/// A system command the module uses, and the Debian package that provides it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tool {
    Nft,
    Nsenter,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Nft => "nft",
            Tool::Nsenter => "nsenter",
        }
    }

    fn package(self) -> &'static str {
        match self {
            Tool::Nft => "nftables",
            Tool::Nsenter => "util-linux",
        }
    }
}

const SYSTEM_DIRECTORIES: &[&str] = &["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// The absolute path of a tool, from the system directories only.
pub(crate) fn locate(tool: Tool) -> Result<PathBuf, Error> {
    SYSTEM_DIRECTORIES
        .iter()
        .map(|directory| Path::new(directory).join(tool.name()))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| Error::ToolMissing {
            tool: tool.name(),
            package: tool.package(),
            searched: SYSTEM_DIRECTORIES.join(", "),
        })
}

/// Where a command runs: the caller's network namespace or another one, entered by `nsenter`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Place<'a> {
    Here,
    Netns(&'a Path),
}

impl<'a> Place<'a> {
    pub(crate) fn host(host_netns: Option<&'a Path>) -> Place<'a> {
        match host_netns {
            Some(path) => Place::Netns(path),
            None => Place::Here,
        }
    }
}

/// Runs `tool arguments...` in `place`, feeding `stdin` when given; returns stdout.
pub(crate) fn run(
    place: Place<'_>,
    tool: Tool,
    arguments: &[&str],
    stdin: Option<&str>,
) -> Result<String, Error> {
    let tool_path = locate(tool)?;
    let mut command = match place {
        Place::Here => Command::new(&tool_path),
        Place::Netns(netns) => {
            // nsenter only switches the network namespace; if it cannot, it fails before the
            // tool runs, so a host-side command never lands in the wrong namespace.
            let mut command = Command::new(locate(Tool::Nsenter)?);
            command
                .arg(format!("--net={}", netns.display()))
                .arg("--")
                .arg(&tool_path);
            command
        }
    };
    command
        .args(arguments)
        .env_clear()
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let description = describe(place, tool, arguments);
    let mut child = command.spawn().map_err(|source| Error::Spawn {
        command: description.clone(),
        source,
    })?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input.as_bytes())
            .map_err(|source| Error::Spawn {
                command: description.clone(),
                source,
            })?;
    }
    let output = child.wait_with_output().map_err(|source| Error::Spawn {
        command: description.clone(),
        source,
    })?;
    if !output.status.success() {
        return Err(Error::CommandFailed {
            command: description,
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn describe(place: Place<'_>, tool: Tool, arguments: &[&str]) -> String {
    let prefix = match place {
        Place::Here => String::new(),
        Place::Netns(netns) => format!("nsenter --net={} -- ", netns.display()),
    };
    format!("{prefix}{} {}", tool.name(), arguments.join(" "))
}
