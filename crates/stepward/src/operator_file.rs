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
//! owner may change: either would let an account's writer exempt an endpoint.

use std::os::unix::fs::MetadataExt;
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
    let metadata = std::fs::metadata(&path)
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
    if inside(&path, data_dir) {
        bail!(
            "the operator file {shown} is inside the data directory {}, where an account's \
             files live; keep it outside (the default is operator.toml in stepward's \
             configuration folder)",
            data_dir.display()
        );
    }
    if metadata.len() > MAX_FILE_BYTES {
        bail!(
            "the operator file {shown} is {} bytes, more than the {MAX_FILE_BYTES} an operator \
             file may be",
            metadata.len()
        );
    }
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read the operator file {shown} as UTF-8 text"))?;
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

/// `operator.toml` in stepward's configuration folder, when the environment says where that is.
fn default_path() -> Option<PathBuf> {
    let config = match std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from) {
        Some(xdg) if xdg.is_absolute() => xdg,
        _ => {
            PathBuf::from(std::env::var_os("HOME").filter(|home| !home.is_empty())?).join(".config")
        }
    };
    Some(config.join("stepward").join("operator.toml"))
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
