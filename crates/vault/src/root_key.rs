//! Where the root key comes from: a file, an environment variable, or the default file that
//! the vault generates on first start in the user's configuration directory.

use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::crypto::{KEY_LEN, KeyBytes};
use crate::error::Error;

/// Where the vault's root key is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootKeySource {
    /// A file holding the key as 64 hexadecimal characters (for example one a key manager
    /// mounts).
    File(PathBuf),
    /// An environment variable, by name, holding the key as 64 hexadecimal characters.
    Env(String),
    /// `<config>/stepward/root-keys/<install-id>.key`, generated (mode 0600) on first start,
    /// where `<config>` is [`VaultOptions::user_config_dir`], else `$XDG_CONFIG_HOME`, else
    /// `$HOME/.config`.
    DefaultFile,
}

/// How to open the vault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultOptions {
    pub root_key: RootKeySource,
    /// Overrides the user's configuration directory for [`RootKeySource::DefaultFile`]; `None`
    /// reads `$XDG_CONFIG_HOME`, then `$HOME/.config`.
    pub user_config_dir: Option<PathBuf>,
    /// The data directory the vault's database lives in: a root key file that resolves inside
    /// it (the default file, a given file, a link to one, a rotation's new key) is refused
    /// before any key is generated or rotated, because a copy of the data directory would then
    /// open everything (G20).
    pub data_dir: Option<PathBuf>,
}

impl VaultOptions {
    /// Options with the configuration directory taken from the environment, for the data
    /// directory `data_dir`.
    pub fn new(root_key: RootKeySource, data_dir: &Path) -> VaultOptions {
        VaultOptions {
            root_key,
            user_config_dir: None,
            data_dir: Some(data_dir.to_path_buf()),
        }
    }
}

/// `path` as the file system resolves it: the file itself with every link followed when it
/// exists (a link to a file inside the data directory is inside it), otherwise its nearest
/// existing folder resolved and the rest of the path appended.
fn resolved(path: &Path) -> io::Result<PathBuf> {
    if let Ok(resolved) = fs::canonicalize(path) {
        return Ok(resolved);
    }
    if fs::symlink_metadata(path).is_ok() {
        // It exists but does not resolve: a dangling link, whose target cannot be judged.
        return Err(io::Error::new(
            ErrorKind::NotFound,
            "it is a link that points nowhere",
        ));
    }
    let mut rest = Vec::new();
    let mut ancestor = path;
    while let Some(parent) = ancestor.parent() {
        if let Some(name) = ancestor.file_name() {
            rest.push(name.to_owned());
        }
        ancestor = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        if let Ok(resolved) = fs::canonicalize(ancestor) {
            return Ok(rest
                .iter()
                .rev()
                .fold(resolved, |path, name| path.join(name)));
        }
    }
    Ok(path.to_path_buf())
}

/// Refuses a root key file that resolves inside `data_dir`.
pub(crate) fn refuse_inside_data_dir(
    key_path: &Path,
    data_dir: Option<&Path>,
) -> Result<(), Error> {
    let Some(data_dir) = data_dir else {
        return Ok(());
    };
    let unresolvable = |source| Error::RootKeyUnresolvable {
        path: key_path.to_path_buf(),
        source,
    };
    let data_dir = resolved(data_dir).map_err(unresolvable)?;
    let key = resolved(key_path).map_err(unresolvable)?;
    if key.starts_with(&data_dir) {
        return Err(Error::RootKeyInsideDataDir {
            path: key_path.to_path_buf(),
            data_dir,
        });
    }
    Ok(())
}

/// Something the person running stepward must be told (the binary prints it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The root key file this notice is about, if any.
    pub root_key_path: Option<PathBuf>,
    pub text: String,
}

impl fmt::Display for Notice {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.text)
    }
}

/// Where a root key was read from, for errors and notices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyLocation {
    File(PathBuf),
    Env(String),
}

impl fmt::Display for KeyLocation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyLocation::File(path) => write!(formatter, "{}", path.display()),
            KeyLocation::Env(name) => write!(formatter, "environment variable {name}"),
        }
    }
}

const MISSING_FILE_HINT: &str = "restore the key file from where you keep it (a backup or a key \
                                 manager), or point the vault at it; without it the secrets in \
                                 this data directory are lost";
const MISSING_ENV_HINT: &str = "set the variable to the vault's root key (64 hexadecimal \
                                characters) before starting stepward";

/// The user's configuration directory: the override, else `$XDG_CONFIG_HOME` (when absolute),
/// else `$HOME/.config`. The one reading of it: the root keys, the server's key files and the
/// operator's file all live below it.
pub fn user_config_dir(options_override: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(directory) = options_override {
        return Ok(directory.to_path_buf());
    }
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME") {
        let xdg = PathBuf::from(xdg);
        if xdg.is_absolute() {
            return Ok(xdg);
        }
    }
    match std::env::var_os("HOME") {
        Some(home) if !home.is_empty() => Ok(PathBuf::from(home).join(".config")),
        _ => Err(Error::NoConfigDirectory),
    }
}

/// `<config>/stepward/root-keys/<install-id>.key`.
pub(crate) fn default_key_path(config_dir: &Path, install_id: &str) -> PathBuf {
    config_dir
        .join("stepward")
        .join("root-keys")
        .join(format!("{install_id}.key"))
}

/// Where a rotation puts the new default key until its transaction committed.
pub(crate) fn pending_key_path(key_path: &Path) -> PathBuf {
    let mut name = key_path.as_os_str().to_owned();
    name.push(".next");
    PathBuf::from(name)
}

/// Parses the text of a key file or variable: 64 hexadecimal characters, surrounding
/// whitespace ignored.
pub(crate) fn parse_key_text(text: &str, location: &KeyLocation) -> Result<KeyBytes, Error> {
    let malformed = || Error::RootKeyMalformed {
        location: location.to_string(),
    };
    let trimmed = text.trim();
    if trimmed.len() != KEY_LEN * 2 {
        return Err(malformed());
    }
    let bytes = zeroize::Zeroizing::new(hex::decode(trimmed).map_err(|_| malformed())?);
    KeyBytes::from_slice(&bytes).ok_or_else(malformed)
}

/// Reads a key file; a missing file is [`Error::RootKeyMissing`].
pub(crate) fn read_key_file(path: &Path) -> Result<Option<KeyBytes>, Error> {
    let location = KeyLocation::File(path.to_path_buf());
    match fs::read_to_string(path) {
        Ok(text) => {
            let text = zeroize::Zeroizing::new(text);
            parse_key_text(&text, &location).map(Some)
        }
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::RootKeyUnreadable {
            location: location.to_string(),
            source,
        }),
    }
}

/// Reads a key file that must exist.
pub(crate) fn read_required_key_file(path: &Path) -> Result<KeyBytes, Error> {
    read_key_file(path)?.ok_or_else(|| Error::RootKeyMissing {
        location: path.display().to_string(),
        hint: MISSING_FILE_HINT,
    })
}

/// Reads a key from an environment variable that must be set.
pub(crate) fn read_key_env(name: &str) -> Result<KeyBytes, Error> {
    key_from_env_value(name, std::env::var_os(name))
}

/// The part of [`read_key_env`] that does not touch the process environment.
pub(crate) fn key_from_env_value(
    name: &str,
    value: Option<std::ffi::OsString>,
) -> Result<KeyBytes, Error> {
    let location = KeyLocation::Env(name.to_owned());
    let Some(value) = value else {
        return Err(Error::RootKeyMissing {
            location: location.to_string(),
            hint: MISSING_ENV_HINT,
        });
    };
    let Some(text) = value.to_str() else {
        return Err(Error::RootKeyMalformed {
            location: location.to_string(),
        });
    };
    parse_key_text(text, &location)
}

/// The error for a default key file that should exist but does not.
pub(crate) fn missing_default_key(path: &Path) -> Error {
    Error::RootKeyMissing {
        location: path.display().to_string(),
        hint: MISSING_FILE_HINT,
    }
}

/// Writes `key` to a new file at `path` with mode 0600 (its directories 0700), and syncs it.
/// Returns `Ok(false)` when the file already exists (another process won the race).
///
/// The key is written to a temporary file first and hard-linked into place, so `path` appears
/// with its whole content at once: a process racing to read it never sees a half-written key.
pub(crate) fn write_new_key_file(path: &Path, key: &KeyBytes) -> Result<bool, Error> {
    let write_error = |source| Error::RootKeyWrite {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(write_error)?;
    }
    let mut temporary_name = path.as_os_str().to_owned();
    temporary_name.push(format!(".tmp-{}", crate::crypto::random_id()?));
    let temporary = PathBuf::from(temporary_name);
    let result = write_key_then_link(&temporary, path, key);
    // The temporary name is removed whatever happened; the key lives on under `path` only.
    let _ = fs::remove_file(&temporary);
    match result {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(source) => Err(write_error(source)),
    }
}

fn write_key_then_link(temporary: &Path, path: &Path, key: &KeyBytes) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(temporary)?;
    // Written in two calls so that no reallocated copy of the key text is left unwiped.
    file.write_all(key.dangerously_to_hex().as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    fs::hard_link(temporary, path)?;
    sync_parent(path)
}

/// Writes `key` to `path`, replacing a stale file there (a rotation that never committed).
pub(crate) fn replace_key_file(path: &Path, key: &KeyBytes) -> Result<(), Error> {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(error) if error.kind() == ErrorKind::NotFound => {}
        Err(source) => {
            return Err(Error::RootKeyWrite {
                path: path.to_path_buf(),
                source,
            });
        }
    }
    if write_new_key_file(path, key)? {
        Ok(())
    } else {
        Err(Error::RootKeyWrite {
            path: path.to_path_buf(),
            source: io::Error::new(
                ErrorKind::AlreadyExists,
                "another process wrote the file at the same time",
            ),
        })
    }
}

/// Renames a pending key over the current one, durably.
pub(crate) fn promote_pending_key(pending: &Path, key_path: &Path) -> Result<(), Error> {
    let write_error = |source| Error::RootKeyWrite {
        path: key_path.to_path_buf(),
        source,
    };
    fs::rename(pending, key_path).map_err(write_error)?;
    sync_parent(key_path).map_err(write_error)
}

fn sync_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => File::open(parent)?.sync_all(),
        _ => Ok(()),
    }
}

/// The notice for a key file generated on first start.
pub(crate) fn generated_key_notice(path: &Path) -> Notice {
    Notice {
        root_key_path: Some(path.to_path_buf()),
        text: format!(
            "Made the vault's root key: {path} (readable only by you).\n\
             It stays outside the data directory, so a backup of the data directory alone opens\n\
             nothing: back the key up separately, since without it the secrets are lost.\n\
             To keep it in a key manager instead, see docs/credentials.md (\"The root key\").",
            path = path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g20_env_key_missing_or_malformed_is_a_clear_error() {
        let missing = key_from_env_value("STEPWARD_ROOT_KEY", None).err().unwrap();
        assert!(
            missing
                .to_string()
                .contains("environment variable STEPWARD_ROOT_KEY is missing"),
            "{missing}"
        );
        let malformed = key_from_env_value("K", Some("abc".into())).err().unwrap();
        assert!(matches!(malformed, Error::RootKeyMalformed { .. }));
        let hex_key = "ab".repeat(32);
        assert!(key_from_env_value("K", Some(format!(" {hex_key}\n").into())).is_ok());
    }

    #[test]
    fn g20_default_key_path_is_under_the_config_directory() {
        let path = default_key_path(Path::new("/home/u/.config"), "0123");
        assert_eq!(
            path,
            Path::new("/home/u/.config/stepward/root-keys/0123.key")
        );
        assert_eq!(
            pending_key_path(&path),
            Path::new("/home/u/.config/stepward/root-keys/0123.key.next")
        );
    }
}
