//! The file-tool helper: a fresh process per call, never the platform's (G22).
//!
//! The platform sends the call as JSON on the helper's stdin and reads the reply from its
//! stdout. The helper is started with an empty environment and, when the platform runs as
//! root, under an unprivileged user id and group with no capabilities (a change of user from
//! root clears them), so a bug in the file tools is held by the kernel's permission checks
//! too: the helper can reach only what that user may, which is the step's scratch tree.
//! It is killed, by its own pid, when it outlives the call's time. It runs under limits like a
//! sandbox: the caller moves it into a group with a memory and a task limit (a
//! `sandbox::HelperCell`, through `confine`) before it hands it the call, and the helper sets
//! its own resource limits ([`HELPER_RLIMITS`]) before it reads anything.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalogue::ToolKind;
use crate::files::FileTools;
use crate::looping::ToolReply;

/// The largest request or reply the helper exchanges.
const MAX_MESSAGE_BYTES: u64 = 16 * 1024 * 1024;

/// The resource limits the helper sets on itself before it reads its request: address space
/// (its request, a file read whole, its reply: a few times 16 MiB), the largest file it may
/// write (what Write and Edit may write), open files (a walk holds one folder at a time), no
/// child process, CPU seconds, and no core dump.
pub const HELPER_RLIMITS: &[(&str, u64)] = &[
    ("address_space", 1024 * 1024 * 1024),
    ("file_size", crate::files::MAX_WRITE_BYTES as u64),
    ("open_files", 64),
    ("processes", 0),
    ("cpu_seconds", 120),
    ("core", 0),
];

/// Sets [`HELPER_RLIMITS`] on this process (soft and hard: it can never raise them again).
fn limit_this_process() -> Result<(), String> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    for (name, value) in HELPER_RLIMITS {
        let resource = match *name {
            "address_space" => Resource::As,
            "file_size" => Resource::Fsize,
            "open_files" => Resource::Nofile,
            "processes" => Resource::Nproc,
            "cpu_seconds" => Resource::Cpu,
            _ => Resource::Core,
        };
        let limit = Rlimit {
            current: Some(*value),
            maximum: Some(*value),
        };
        setrlimit(resource, limit)
            .map_err(|errno| format!("the helper's {name} limit: {errno}"))?;
    }
    Ok(())
}

/// One call of a file tool, as the helper receives it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HelperRequest {
    /// The scratch tree (the agent's view) on the host.
    pub root: PathBuf,
    pub agent: String,
    /// Workspace paths of the scripts agent files name (protected from every write).
    pub scripts: Vec<String>,
    pub writable: bool,
    /// `Read`, `Write`, `Edit`, `Glob` or `Grep`.
    pub tool: String,
    pub arguments: Map<String, Value>,
}

fn kind_of(tool: &str) -> Option<ToolKind> {
    Some(match tool {
        "Read" => ToolKind::Read,
        "Write" => ToolKind::Write,
        "Edit" => ToolKind::Edit,
        "Glob" => ToolKind::Glob,
        "Grep" => ToolKind::Grep,
        _ => return None,
    })
}

/// The helper's side: its own limits first, then one request from `input`, its reply to
/// `output`. Returns the exit code.
pub fn serve(input: &mut dyn Read, output: &mut dyn Write) -> i32 {
    if limit_this_process().is_err() {
        return 3;
    }
    let mut text = Vec::new();
    if input
        .take(MAX_MESSAGE_BYTES)
        .read_to_end(&mut text)
        .is_err()
    {
        return 2;
    }
    let reply = match serde_json::from_slice::<HelperRequest>(&text) {
        Err(error) => ToolReply::error(format!("the file tool's request is malformed: {error}")),
        Ok(request) => match kind_of(&request.tool) {
            None => ToolReply::error(format!("`{}` is not a file tool", request.tool)),
            Some(kind) => {
                let scripts = request
                    .scripts
                    .iter()
                    .filter_map(|script| workspace::RelPath::parse(script).ok());
                match FileTools::new(
                    &request.root,
                    &request.agent,
                    workspace::StepWriterRules::new(scripts),
                    request.writable,
                ) {
                    Ok(tools) => tools.call(&kind, &request.arguments),
                    Err(error) => ToolReply::error(format!("the tree cannot be opened: {error}")),
                }
            }
        },
    };
    match serde_json::to_vec(&reply) {
        Ok(bytes) if output.write_all(&bytes).is_ok() => 0,
        _ => 2,
    }
}

/// How the platform starts the helper.
#[derive(Debug, Clone)]
pub struct HelperCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The unprivileged user and group it runs as (when the platform is root).
    pub user: Option<(u32, u32)>,
}

/// The platform's side: runs `request` in a fresh helper, at most `timeout`. `confine` gets the
/// helper's pid as soon as it is started, before it is handed the request (it moves it into
/// its cell's group); the helper is killed and the call fails if it cannot.
pub fn call(
    command: &HelperCommand,
    request: &HelperRequest,
    timeout: Duration,
    confine: &dyn Fn(u32) -> Result<(), String>,
) -> Result<ToolReply, String> {
    use std::os::unix::process::CommandExt;
    let body = serde_json::to_vec(request).map_err(|error| error.to_string())?;
    let mut builder = Command::new(&command.program);
    builder
        .args(&command.args)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some((uid, gid)) = command.user {
        // std drops every supplementary group when root changes user (setgroups(0)).
        builder.uid(uid).gid(gid);
    }
    let mut child = builder
        .spawn()
        .map_err(|error| format!("the file-tool helper cannot start: {error}"))?;
    if let Err(reason) = confine(child.id()) {
        // Our own child, by its pid.
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("the file-tool helper cannot be confined: {reason}"));
    }
    let mut stdin = child.stdin.take().ok_or("the helper has no stdin")?;
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let mut stdout = child.stdout.take().ok_or("the helper has no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = (&mut stdout)
            .take(MAX_MESSAGE_BYTES)
            .read_to_end(&mut bytes);
        bytes
    });
    let deadline = Instant::now()
        .checked_add(timeout)
        .unwrap_or_else(Instant::now);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                // Our own child, by its pid.
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the file tool ran past its {} seconds and was stopped",
                    timeout.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_micros(200)),
            Err(error) => return Err(format!("the file-tool helper was lost: {error}")),
        }
    };
    let _ = writer.join();
    let bytes = reader
        .join()
        .map_err(|_| "the helper's reply was lost".to_owned())?;
    if !status.success() {
        return Err(format!("the file-tool helper failed ({status})"));
    }
    serde_json::from_slice(&bytes)
        .map_err(|error| format!("the helper's reply is malformed: {error}"))
}
