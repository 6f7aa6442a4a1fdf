//! The runtime cache (issue 13, part 2): what discovery found (the interpreter's facts and its
//! read-only view), kept across process starts so that a `stepward run` does not ask Python
//! and `ldd` again every time.
//!
//! The cache says which host files to bind into every sandbox, so it is trusted only as far as
//! it can be checked at load, with `fstat` on what was opened:
//! - its folder is root's and closed to everyone else (0700), outside the data directory;
//! - its file is a regular root-owned file with one link that nobody else may write;
//! - each entry is keyed on the interpreter's and the standard library's identity (path,
//!   device, inode, size, mtime): an upgraded Python misses and is discovered again;
//! - every path in it is absolute and plain, lies under the interpreter's prefix or the system
//!   library folders, and names (checked without following a final link) a regular file or a
//!   directory, as the entry says, owned by root and writable by neither group nor others,
//!   in folders that are closed the same way (`trust`); a file must still be the inode
//!   discovery saw.
//!
//! Anything else throws the whole cache away: discovery runs again and rewrites it.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::runtime::{Runtime, RuntimeMount};
use crate::{Error, PythonPin};

/// The file inside the cache folder.
const CACHE_FILE: &str = "runtimes-v1.json";

/// The system library folders a cached path may lie under, besides the interpreter's prefix.
const LIBRARY_FOLDERS: [&str; 5] = ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"];

/// How discovery used the cache, for the backend's record and the tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheUse {
    /// No cache folder is configured.
    Off,
    /// Every runtime came from the cache.
    Hit,
    /// The cache was missing, stale or refused (the reason), and was rebuilt.
    Rebuilt { reason: String },
}

/// The identity of a file or folder: where it is and which inode, how big, how old.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Identity {
    path: PathBuf,
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

impl Identity {
    pub(crate) fn of(path: &Path) -> std::io::Result<Identity> {
        let metadata = std::fs::metadata(path)?;
        Ok(Identity {
            path: path.to_path_buf(),
            dev: metadata.dev(),
            ino: metadata.ino(),
            size: metadata.size(),
            mtime_ns: i128::from(metadata.mtime()) * 1_000_000_000
                + i128::from(metadata.mtime_nsec()),
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheFile {
    /// The discovery options the cache was made under (candidates, `ldd`, data folders).
    options: String,
    /// The interpreters discovery considered (canonical paths); another set misses.
    considered: Vec<PathBuf>,
    /// Interpreters found but not usable, with why.
    skipped: Vec<String>,
    entries: Vec<Entry>,
}

/// What a cache hit gives: the runtimes and the interpreters that were not usable.
pub(crate) struct Cached {
    pub(crate) runtimes: Vec<Runtime>,
    pub(crate) skipped: Vec<String>,
}

/// One interpreter as discovery described it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    executable: Identity,
    stdlib: Identity,
    version: String,
    major: u16,
    minor: u16,
    stdlib_module_names: Vec<String>,
    mounts: Vec<CachedMount>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
enum CachedMount {
    File {
        source: PathBuf,
        target: PathBuf,
        dev: u64,
        ino: u64,
    },
    Dir {
        source: PathBuf,
        target: PathBuf,
    },
    Mask {
        target: PathBuf,
    },
}

/// The cache folder, checked.
pub(crate) struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub(crate) fn new(dir: &Path) -> Cache {
        Cache {
            dir: dir.to_path_buf(),
        }
    }

    /// The cached runtimes, if the cache was made under `options` for the interpreters in
    /// `considered` and passes every check; `Err` with the reason when it must be thrown away.
    pub(crate) fn load(&self, options: &str, considered: &[PathBuf]) -> Result<Cached, String> {
        let dir = open_checked_dir(&self.dir)?;
        let file = open_checked_file(&dir, &self.dir.join(CACHE_FILE))?;
        let mut text = String::new();
        std::fs::File::from(file)
            .read_to_string(&mut text)
            .map_err(|error| format!("cannot read the cache: {error}"))?;
        let cache: CacheFile = serde_json::from_str(&text)
            .map_err(|error| format!("the cache is not readable: {error}"))?;
        if cache.options != options {
            return Err(String::from("the discovery options changed"));
        }
        if cache.considered != considered {
            return Err(String::from("the interpreters on this host changed"));
        }
        let runtimes = cache
            .entries
            .into_iter()
            .map(check_entry)
            .collect::<Result<Vec<Runtime>, String>>()?;
        Ok(Cached {
            runtimes,
            skipped: cache.skipped,
        })
    }

    /// Writes the runtimes as the new cache (beside, then renamed). The folder is created
    /// root-owned and 0700 when missing; one that exists must already pass the checks.
    pub(crate) fn store(
        &self,
        options: &str,
        considered: &[PathBuf],
        runtimes: &[Runtime],
        skipped: &[String],
    ) -> Result<(), Error> {
        use std::os::unix::fs::DirBuilderExt;
        if !self.dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
                .map_err(|source| Error::io("cannot create", &self.dir, source))?;
        }
        open_checked_dir(&self.dir).map_err(|detail| Error::RuntimeDiscovery {
            path: self.dir.clone(),
            detail: format!("the runtime cache folder is refused: {detail}"),
        })?;
        let entries = runtimes
            .iter()
            .map(entry_of)
            .collect::<Result<Vec<Entry>, Error>>()?;
        let file = CacheFile {
            options: options.to_owned(),
            considered: considered.to_vec(),
            skipped: skipped.to_vec(),
            entries,
        };
        let text = serde_json::to_vec(&file).map_err(|source| Error::Plan {
            action: "encoded",
            source,
        })?;
        let temporary = self
            .dir
            .join(format!("{CACHE_FILE}.{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temporary)
            .map_err(|source| Error::io("cannot write", &temporary, source))?;
        file.write_all(&text)
            .and_then(|()| file.sync_all())
            .map_err(|source| Error::io("cannot write", &temporary, source))?;
        std::fs::rename(&temporary, self.dir.join(CACHE_FILE))
            .map_err(|source| Error::io("cannot rename", &temporary, source))
    }
}

fn entry_of(runtime: &Runtime) -> Result<Entry, Error> {
    let identity = |path: &Path| {
        Identity::of(path).map_err(|source| Error::io("cannot inspect", path, source))
    };
    let mounts = runtime
        .mounts
        .iter()
        .map(|mount| {
            Ok(match mount {
                RuntimeMount::File { source, target } => {
                    let metadata = std::fs::metadata(source)
                        .map_err(|error| Error::io("cannot inspect", source, error))?;
                    CachedMount::File {
                        source: source.clone(),
                        target: target.clone(),
                        dev: metadata.dev(),
                        ino: metadata.ino(),
                    }
                }
                RuntimeMount::Dir { source, target } => CachedMount::Dir {
                    source: source.clone(),
                    target: target.clone(),
                },
                RuntimeMount::Mask { target } => CachedMount::Mask {
                    target: target.clone(),
                },
            })
        })
        .collect::<Result<Vec<CachedMount>, Error>>()?;
    Ok(Entry {
        executable: identity(&runtime.executable)?,
        stdlib: identity(&runtime.stdlib)?,
        version: runtime.version.clone(),
        major: runtime.pin.major,
        minor: runtime.pin.minor,
        stdlib_module_names: runtime.stdlib_module_names.to_vec(),
        mounts,
    })
}

/// Checks one entry against the host as it is now; the runtime it describes, or why not.
fn check_entry(entry: Entry) -> Result<Runtime, String> {
    let executable = &entry.executable.path;
    for identity in [&entry.executable, &entry.stdlib] {
        let now = Identity::of(&identity.path)
            .map_err(|error| format!("{}: {error}", identity.path.display()))?;
        if now != *identity {
            return Err(format!(
                "{} changed since discovery (an upgrade?)",
                identity.path.display()
            ));
        }
    }
    let allowed = allowed_roots(executable)?;
    check_path(executable, &allowed, Kind::File)?;
    check_path(&entry.stdlib.path, &allowed, Kind::Dir)?;
    let mut mounts = Vec::with_capacity(entry.mounts.len());
    for mount in entry.mounts {
        mounts.push(match mount {
            CachedMount::File {
                source,
                target,
                dev,
                ino,
            } => {
                let metadata = check_path(&source, &allowed, Kind::File)?;
                if (metadata.st_dev, metadata.st_ino) != (dev, ino) {
                    return Err(format!(
                        "{} is not the file discovery saw",
                        source.display()
                    ));
                }
                check_target(&target, &allowed)?;
                RuntimeMount::File { source, target }
            }
            CachedMount::Dir { source, target } => {
                check_path(&source, &allowed, Kind::Dir)?;
                check_target(&target, &allowed)?;
                RuntimeMount::Dir { source, target }
            }
            CachedMount::Mask { target } => {
                check_target(&target, &allowed)?;
                RuntimeMount::Mask { target }
            }
        });
    }
    Ok(Runtime {
        version: entry.version,
        pin: PythonPin {
            major: entry.major,
            minor: entry.minor,
        },
        executable: executable.clone(),
        stdlib: entry.stdlib.path,
        stdlib_module_names: Arc::new(entry.stdlib_module_names),
        mounts,
    })
}

/// The interpreter's prefix (the folder above its `bin`, never `/` itself) and the system
/// library folders.
fn allowed_roots(executable: &Path) -> Result<Vec<PathBuf>, String> {
    let mut roots: Vec<PathBuf> = LIBRARY_FOLDERS.iter().map(PathBuf::from).collect();
    let prefix = executable
        .parent()
        .filter(|bin| bin.file_name().is_some_and(|name| name == "bin"))
        .and_then(Path::parent)
        .ok_or_else(|| {
            format!(
                "{} is not in a `bin` folder, so it has no prefix",
                executable.display()
            )
        })?;
    if prefix != Path::new("/") {
        roots.push(prefix.to_path_buf());
    }
    Ok(roots)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

/// An absolute path without `.` or `..` under one of `allowed`.
fn check_plain(path: &Path, allowed: &[PathBuf]) -> Result<(), String> {
    let plain = path.is_absolute()
        && path
            .components()
            .all(|component| matches!(component, Component::RootDir | Component::Normal(_)));
    if !plain {
        return Err(format!("{} is not a plain absolute path", path.display()));
    }
    if !allowed.iter().any(|root| path.starts_with(root)) {
        return Err(format!(
            "{} lies outside the interpreter's prefix and the system library folders",
            path.display()
        ));
    }
    Ok(())
}

fn check_target(target: &Path, allowed: &[PathBuf]) -> Result<(), String> {
    check_plain(target, allowed)
}

/// Opens `path` without following a final link and checks, with `fstat` on what was opened,
/// that it is a file or folder as `kind` says, under the rule discovery applied (`trust`):
/// root's, neither group nor others may write it or the folders above it, so a folder opened
/// since cannot have let anyone swap what it holds.
fn check_path(path: &Path, allowed: &[PathBuf], kind: Kind) -> Result<libc::stat, String> {
    check_plain(path, allowed)?;
    let stat = crate::runtime::trust::closed_source(path)?;
    let format = stat.st_mode & libc::S_IFMT;
    let expected = match kind {
        Kind::File => libc::S_IFREG,
        Kind::Dir => libc::S_IFDIR,
    };
    if format != expected {
        return Err(format!(
            "{} is not a {}",
            path.display(),
            if kind == Kind::File {
                "regular file"
            } else {
                "directory"
            }
        ));
    }
    Ok(stat)
}

pub(crate) fn open_path(path: &Path, flags: libc::c_int) -> Result<OwnedFd, String> {
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("{} holds a NUL byte", path.display()))?;
    // SAFETY: open of a valid C string; the descriptor is owned below.
    let fd = unsafe { libc::open(c_path.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(format!(
            "{}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the descriptor is fresh and owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub(crate) fn fstat(fd: &OwnedFd, path: &Path) -> Result<libc::stat, String> {
    // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on a descriptor we own, into a local.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } == -1 {
        return Err(format!(
            "{}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(stat)
}

/// The cache folder: a root-owned directory nobody else may enter (0700).
fn open_checked_dir(dir: &Path) -> Result<OwnedFd, String> {
    let fd = open_path(dir, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW)?;
    let stat = fstat(&fd, dir)?;
    if stat.st_uid != 0 || stat.st_mode & 0o077 != 0 {
        return Err(format!(
            "{} must be root's and closed to others (0700)",
            dir.display()
        ));
    }
    Ok(fd)
}

/// The cache file, opened inside the checked folder: a regular root-owned file with one link
/// that nobody else may write.
fn open_checked_file(dir: &OwnedFd, path: &Path) -> Result<OwnedFd, String> {
    let name = std::ffi::CString::new(CACHE_FILE).map_err(|_| String::from("bad name"))?;
    // SAFETY: openat relative to a directory we own, with a valid C string.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(format!(
            "{}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the descriptor is fresh and owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let stat = fstat(&fd, path)?;
    if stat.st_mode & libc::S_IFMT != libc::S_IFREG
        || stat.st_uid != 0
        || stat.st_mode & 0o022 != 0
        || stat.st_nlink != 1
    {
        return Err(format!(
            "{} must be a regular root-owned file with one link that only root may write",
            path.display()
        ));
    }
    Ok(fd)
}
