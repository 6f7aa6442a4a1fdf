//! The server's own keys on disk: the approve-link signing key and the CSRF key, each in its own
//! file with mode 0600 under `<config>/stepward/server-keys/<install id>/` (`<config>` is
//! `$XDG_CONFIG_HOME`, else `$HOME/.config`).
//!
//! They live outside the data directory, so a copy of the data directory can neither forge an
//! approve link nor a form token, and they are never the vault's root key (G24: "a signing key
//! kept apart from the vault's keys"). A key file readable by anyone but its owner is refused,
//! not repaired: someone may have read it already.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use auth::{ApproveLinkKey, CsrfKey, KeyId, KeyRing};
use server::ServerKeys;

const APPROVE_LINK_KEY_FILE: &str = "approve-links.key";
const CSRF_KEY_FILE: &str = "csrf.key";

/// Where one installation's server keys are.
#[derive(Debug, Clone)]
pub struct ServerKeyFiles {
    dir: PathBuf,
}

impl ServerKeyFiles {
    /// The key folder of the installation `install_id` (the vault's install id, which the data
    /// directory carries), refused when it would sit inside `data_dir`.
    pub fn for_install(install_id: &str, data_dir: &Path) -> anyhow::Result<ServerKeyFiles> {
        let plain = !install_id.is_empty()
            && install_id
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
        if !plain {
            bail!("the install id `{install_id}` cannot name a folder");
        }
        let dir = user_config_dir()?
            .join("stepward")
            .join("server-keys")
            .join(install_id);
        let files = ServerKeyFiles { dir };
        files.refuse_inside(data_dir)?;
        Ok(files)
    }

    pub fn approve_link_key_path(&self) -> PathBuf {
        self.dir.join(APPROVE_LINK_KEY_FILE)
    }

    pub fn csrf_key_path(&self) -> PathBuf {
        self.dir.join(CSRF_KEY_FILE)
    }

    /// Reads both keys, creating each one that does not exist yet.
    pub fn load_or_create(&self) -> anyhow::Result<ServerKeys> {
        self.create_dir()?;
        let approve_path = self.approve_link_key_path();
        let approve_link_key = match read_key_file(&approve_path)? {
            Some(text) => ApproveLinkKey::decode_key_file(&text)
                .with_context(|| format!("cannot read the key file {}", approve_path.display()))?,
            None => {
                let key = ApproveLinkKey::generate()?;
                write_new_key_file(&approve_path, &key.dangerously_encode_key_file())?;
                key
            }
        };
        let csrf_path = self.csrf_key_path();
        let csrf = match read_key_file(&csrf_path)? {
            Some(text) => CsrfKey::decode_key_file(&text)
                .with_context(|| format!("cannot read the key file {}", csrf_path.display()))?,
            None => {
                let key = CsrfKey::generate()?;
                write_new_key_file(&csrf_path, &key.dangerously_encode_key_file())?;
                key
            }
        };
        Ok(ServerKeys {
            csrf,
            approve_links: KeyRing::new(approve_link_key),
        })
    }

    /// Replaces the approve-link key file with a new key (written beside it, then renamed over
    /// it, so a crash leaves either key whole) and returns the new key's id. Every link signed
    /// with the old key stops verifying once a server loads the new file.
    pub fn rotate_approve_link_key(&self) -> anyhow::Result<KeyId> {
        self.create_dir()?;
        let key = ApproveLinkKey::generate()?;
        let path = self.approve_link_key_path();
        let pending = self.dir.join(format!("{APPROVE_LINK_KEY_FILE}.new"));
        match std::fs::remove_file(&pending) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                return Err(error).with_context(|| format!("cannot remove {}", pending.display()));
            }
        }
        write_new_key_file(&pending, &key.dangerously_encode_key_file())?;
        std::fs::rename(&pending, &path).with_context(|| {
            format!(
                "cannot move the new key file {} over {}",
                pending.display(),
                path.display()
            )
        })?;
        sync_dir(&self.dir)?;
        Ok(key.key_id())
    }

    fn create_dir(&self) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create the key folder {}", self.dir.display()))?;
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot set the mode of {}", self.dir.display()))
    }

    /// A key folder inside the data directory would make a copy of the data directory enough
    /// to forge approve links.
    fn refuse_inside(&self, data_dir: &Path) -> anyhow::Result<()> {
        let data_dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
        let mut existing = self.dir.as_path();
        // The folder may not exist yet: resolve its nearest existing ancestor.
        let resolved = loop {
            if let Ok(resolved) = std::fs::canonicalize(existing) {
                break Some(resolved);
            }
            match existing.parent() {
                Some(parent) => existing = parent,
                None => break None,
            }
        };
        let inside = self.dir.starts_with(&data_dir)
            || resolved.is_some_and(|resolved| resolved.starts_with(&data_dir));
        if inside {
            bail!(
                "the server's key folder {} is inside the data directory {}: a copy of the data \
                 directory would then forge approve links; set XDG_CONFIG_HOME to a folder \
                 outside it",
                self.dir.display(),
                data_dir.display()
            );
        }
        Ok(())
    }
}

/// `$XDG_CONFIG_HOME` when absolute, else `$HOME/.config`: where the vault finds its root key.
fn user_config_dir() -> anyhow::Result<PathBuf> {
    vault::user_config_dir(None).map_err(|_| {
        anyhow::anyhow!(
            "neither $XDG_CONFIG_HOME nor $HOME says where the server's key files live; set one"
        )
    })
}

/// The text of a key file, `None` if there is none. A file others may read is refused.
fn read_key_file(path: &Path) -> anyhow::Result<Option<zeroize::Zeroizing<String>>> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(error).with_context(|| format!("cannot read {}", path.display()));
        }
    };
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        bail!(
            "the key file {} has mode {mode:o}: others may have read it; replace the key \
             (`stepward keys rotate-links` for the approve-link key, or remove the CSRF key file \
             to get a new one) and keep the file at mode 600",
            path.display()
        );
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Some(zeroize::Zeroizing::new(text)))
}

/// Writes a key file that must not exist yet, with mode 0600 from its creation on, and syncs
/// it and its folder.
fn write_new_key_file(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create the key file {}", path.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write the key file {}", path.display()))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> anyhow::Result<()> {
    File::open(dir)
        .and_then(|dir| dir.sync_all())
        .with_context(|| format!("cannot sync the folder {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::{ServerKeyFiles, write_new_key_file};

    fn files_in(dir: &tempfile::TempDir) -> ServerKeyFiles {
        ServerKeyFiles {
            dir: dir.path().join("server-keys").join("install"),
        }
    }

    #[test]
    fn g24_keys_are_created_once_in_their_own_0600_files_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(&dir);
        let first = files.load_or_create().unwrap();
        let again = files.load_or_create().unwrap();
        assert_eq!(
            first.approve_links.current().key_id(),
            again.approve_links.current().key_id()
        );
        assert_eq!(first.csrf.key_id(), again.csrf.key_id());
        for path in [files.approve_link_key_path(), files.csrf_key_path()] {
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", path.display());
        }
        let folder_mode = std::fs::metadata(&files.dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(folder_mode, 0o700);
    }

    #[test]
    fn g24_rotation_replaces_the_approve_link_key_and_keeps_the_csrf_key() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(&dir);
        let before = files.load_or_create().unwrap();
        let new_id = files.rotate_approve_link_key().unwrap();
        assert_ne!(new_id, before.approve_links.current().key_id());
        let after = files.load_or_create().unwrap();
        assert_eq!(after.approve_links.current().key_id(), new_id);
        assert_eq!(after.csrf.key_id(), before.csrf.key_id());
    }

    #[test]
    fn g24_a_key_file_others_may_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(&dir);
        files.load_or_create().unwrap();
        let path = files.csrf_key_path();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = files.load_or_create().err().unwrap();
        assert!(
            format!("{error:#}").contains("others may have read it"),
            "{error:#}"
        );
    }

    #[test]
    fn g24_a_key_file_of_the_other_kind_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(&dir);
        files.load_or_create().unwrap();
        let csrf_text = std::fs::read_to_string(files.csrf_key_path()).unwrap();
        std::fs::remove_file(files.approve_link_key_path()).unwrap();
        write_new_key_file(&files.approve_link_key_path(), &csrf_text).unwrap();
        assert!(files.load_or_create().is_err());
    }

    #[test]
    fn g24_a_key_folder_inside_the_data_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let files = ServerKeyFiles {
            dir: dir.path().join("data").join("keys"),
        };
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        assert!(files.refuse_inside(&dir.path().join("data")).is_err());
        assert!(files.refuse_inside(&dir.path().join("elsewhere")).is_ok());
    }
}
