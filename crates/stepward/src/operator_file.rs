//! The operator's configuration file (newcomer 3, item 8): settings only the person who runs
//! stepward may make, kept where nothing of an account can write them. Today it holds the
//! model endpoints providers may reach although they are private or plain `http`, as
//! `--allow-model-endpoint` does:
//!
//! ```toml
//! allow_model_endpoints = ["127.0.0.1:8081"]
//! ```
//!
//! It is `--operator-config FILE` (or `STEPWARD_OPERATOR_CONFIG`), else `operator.toml` in
//! stepward's configuration folder (`$XDG_CONFIG_HOME/stepward`, else `~/.config/stepward`,
//! beside the root keys) when that file exists. The API, the console and every step reach
//! only the data directory, so a file there is refused, as is one that a user other than its
//! owner may change, or one in a folder (at any depth above it) that others may change:
//! each would let someone else exempt an endpoint. The file is resolved once, opened without
//! following a link and checked on the open file, so the file checked is the file read.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;

/// The largest operator file read: a few lines are expected.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// What an operator file says, and where it was read.
#[derive(Debug, Clone)]
pub struct OperatorFile {
    pub path: PathBuf,
    pub allow_model_endpoints: Vec<llm::Endpoint>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Text {
    #[serde(default)]
    allow_model_endpoints: Vec<toml::Spanned<String>>,
}

/// The operator file in force: `explicit` (which must exist), else the default one if it
/// exists; `None` when there is none. Refused (with the file's name and what would be right)
/// when others may change it, when it lies inside `data_dir`, or when it does not parse.
pub fn read(explicit: Option<&Path>, data_dir: &Path) -> anyhow::Result<Option<OperatorFile>> {
    let path = match explicit {
        Some(path) => path.to_path_buf(),
        None => match default_path() {
            Some(path) if path.exists() => path,
            _ => return Ok(None),
        },
    };
    let shown = path.display();
    // Resolved once, then opened without following a link and checked on the open file, so
    // the file checked is the file read; every folder above it must be as private as it is.
    let real = std::fs::canonicalize(&path)
        .with_context(|| format!("cannot read the operator file {shown}"))?;
    if inside(&real, data_dir) {
        bail!(
            "the operator file {shown} is inside the data directory {}, where an account's \
             files live; keep it outside (the default is operator.toml in stepward's \
             configuration folder)",
            data_dir.display()
        );
    }
    for folder in real.ancestors().skip(1) {
        private_enough(folder, &shown.to_string())?;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(open_flags())
        .open(&real)
        .with_context(|| format!("cannot open the operator file {shown}"))?;
    let metadata = file
        .metadata()
        .with_context(|| format!("cannot read the operator file {shown}"))?;
    if !metadata.is_file() {
        bail!("the operator file {shown} is not a file; give a file (--operator-config)");
    }
    let me = rustix::process::geteuid().as_raw();
    if metadata.uid() != me && metadata.uid() != 0 {
        bail!(
            "the operator file {shown} belongs to user id {}, not to the user stepward runs as \
             ({me}) or root: whoever owns it could exempt model endpoints; `chown` it",
            metadata.uid()
        );
    }
    if metadata.mode() & 0o022 != 0 {
        bail!(
            "the operator file {shown} may be changed by other users (mode {:o}), who could \
             then exempt model endpoints; make it yours alone: chmod 600 {shown}",
            metadata.mode() & 0o777
        );
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read the operator file {shown}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        bail!(
            "the operator file {shown} is more than the {MAX_FILE_BYTES} bytes an operator file \
             may be"
        );
    }
    let text = String::from_utf8(bytes)
        .with_context(|| format!("the operator file {shown} is not UTF-8 text"))?;
    let parsed: Text = toml::from_str(&text).map_err(|error| {
        let place = error
            .span()
            .map(|span| line_column(&text, span.start))
            .map_or_else(String::new, |(line, column)| format!(":{line}:{column}"));
        anyhow::anyhow!(
            "{shown}{place}: {}; an operator file takes allow_model_endpoints = [\"HOST:PORT\", ...]",
            error.message()
        )
    })?;
    let mut allow_model_endpoints = Vec::new();
    for entry in parsed.allow_model_endpoints {
        let (line, column) = line_column(&text, entry.span().start);
        let endpoint = entry
            .get_ref()
            .parse::<llm::Endpoint>()
            .map_err(|error| anyhow::anyhow!("{shown}:{line}:{column}: {error}"))?;
        allow_model_endpoints.push(endpoint);
    }
    Ok(Some(OperatorFile {
        path,
        allow_model_endpoints,
    }))
}

/// `operator.toml` in stepward's configuration folder (`vault::user_config_dir`, where the
/// root keys are), when the environment names one that is absolute: a relative `$HOME` names
/// no default.
fn default_path() -> Option<PathBuf> {
    let config = vault::user_config_dir(None)
        .ok()
        .filter(|dir| dir.is_absolute())?;
    Some(config.join("stepward").join("operator.toml"))
}

/// The flags the operator file is opened with: never through a link (it was resolved), and
/// never waiting on a FIFO put in its place.
fn open_flags() -> i32 {
    (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK)
        .bits()
        .cast_signed()
}

/// Refuses a folder above the operator file that someone else could change: one not owned by
/// this user or root, or writable by others without the sticky bit (as `/tmp` has), where
/// they could put another file in its place.
fn private_enough(folder: &Path, shown: &str) -> anyhow::Result<()> {
    let metadata = std::fs::metadata(folder)
        .with_context(|| format!("cannot read {}, a folder above {shown}", folder.display()))?;
    let me = rustix::process::geteuid().as_raw();
    let sticky = metadata.mode() & 0o1000 != 0;
    if (metadata.uid() != me && metadata.uid() != 0) || (metadata.mode() & 0o022 != 0 && !sticky) {
        bail!(
            "the folder {} above the operator file {shown} may be changed by other users \
             (owner {}, mode {:o}), who could then put another operator file in its place; keep \
             the file in folders that only you or root can change",
            folder.display(),
            metadata.uid(),
            metadata.mode() & 0o7777
        );
    }
    Ok(())
}

/// Whether `path` is inside `folder`, both resolved as far as they exist (a link into the
/// data directory counts as inside).
fn inside(path: &Path, folder: &Path) -> bool {
    let resolve = |path: &Path| {
        std::fs::canonicalize(path).unwrap_or_else(|_| {
            std::env::current_dir()
                .map(|here| here.join(path))
                .unwrap_or_else(|_| path.to_path_buf())
        })
    };
    resolve(path).starts_with(resolve(folder))
}

/// The 1-based line and column (in characters) of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |last| last.chars().count())
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::line_column;

    #[test]
    fn a_place_is_counted_in_lines_and_characters_from_one() {
        assert_eq!(line_column("a = 1\nb = 2\n", 0), (1, 1));
        assert_eq!(line_column("a = 1\nb = 2\n", 6), (2, 1));
        assert_eq!(line_column("é = 1", 3), (1, 3));
    }
}
