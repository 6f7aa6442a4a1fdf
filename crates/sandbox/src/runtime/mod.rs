//! Python runtimes (G8): the interpreters this server has, each asked once (at discovery,
//! outside any step, so its answers are trusted) for its exact version and its standard
//! library's module names, and each with its read-only view computed once: the interpreter,
//! the dynamic loader and exactly the shared libraries the interpreter and its `lib-dynload`
//! modules need (their `ldd` closure, plus what a probe run of the interpreter really maps
//! once every `lib-dynload` module is imported: the libraries glibc and the modules `dlopen`
//! on demand, such as `libgcc_s.so.1` for `pthread_exit`), and the standard library without
//! site-packages or dist-packages.
//!
//! A workflow's pin matches on major.minor exactly; no other version is ever substituted.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::{Error, PythonPin};

pub mod cache;
pub use crate::runtime::cache::CacheUse;
mod trust;
pub use crate::runtime::trust::trusted_interpreter;

/// Where to look for interpreters.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// Paths to consider; a final component ending in `*` matches by prefix
    /// (`/usr/bin/python3*`). Names other than `python3` and `python3.N` are skipped.
    pub candidates: Vec<PathBuf>,
    /// The tool that lists an ELF file's shared libraries (glibc's `ldd`).
    pub ldd: PathBuf,
    /// Extra read-only data directories every runtime gets when they exist (time zones).
    pub data_dirs: Vec<PathBuf>,
    /// Where discovery keeps what it found across process starts (see [`cache`]): a
    /// root-owned 0700 folder outside the data directory. `None` discovers every time.
    pub cache_dir: Option<PathBuf>,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        Self {
            candidates: vec![
                PathBuf::from("/usr/bin/python3*"),
                PathBuf::from("/usr/local/bin/python3*"),
            ],
            ldd: PathBuf::from("/usr/bin/ldd"),
            // Time zones, and the C.UTF-8 locale Python coerces the C locale to.
            data_dirs: vec![
                PathBuf::from("/usr/share/zoneinfo"),
                PathBuf::from("/usr/lib/locale/C.utf8"),
            ],
            cache_dir: None,
        }
    }
}

/// How one host path appears in the sandbox's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeMount {
    /// A read-only bind of a file (`source` is canonical; `target` is the path programs use).
    File { source: PathBuf, target: PathBuf },
    /// A read-only bind of a directory tree.
    Dir { source: PathBuf, target: PathBuf },
    /// An empty read-only directory laid over `target` (hides site-packages inside a bound
    /// standard library).
    Mask { target: PathBuf },
}

/// One interpreter and its sandbox view.
#[derive(Debug, Clone)]
pub struct Runtime {
    /// Exact version, e.g. "3.11.2".
    pub version: String,
    pub pin: PythonPin,
    /// The canonical path of the interpreter; the sandbox runs it at the same path.
    pub executable: PathBuf,
    /// Its standard library folder (part of the cache's key).
    pub stdlib: PathBuf,
    /// `sys.stdlib_module_names` of this interpreter, sorted.
    pub stdlib_module_names: Arc<Vec<String>>,
    /// The read-only view, in mount order.
    pub mounts: Vec<RuntimeMount>,
}

/// The interpreters this server has.
#[derive(Debug, Clone)]
pub struct Runtimes {
    runtimes: Vec<Runtime>,
    /// Interpreters that were found but could not be used, with why.
    skipped: Vec<String>,
    /// How discovery used the cache.
    cache_use: CacheUse,
}

/// What the interpreter reports about itself at discovery.
#[derive(serde::Deserialize)]
struct SelfReport {
    version: String,
    major: u16,
    minor: u16,
    stdlib_module_names: Vec<String>,
    stdlib: PathBuf,
    platstdlib: PathBuf,
    dynload: Vec<PathBuf>,
}

/// Run with `-I -S` and an empty environment: asks only the interpreter's built-in facts.
const SELF_REPORT_SCRIPT: &str = "import sys, json, sysconfig\n\
print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], 'major': sys.version_info[0], \
'minor': sys.version_info[1], 'stdlib_module_names': sorted(sys.stdlib_module_names), \
'stdlib': sysconfig.get_path('stdlib'), 'platstdlib': sysconfig.get_path('platstdlib'), \
'dynload': [p for p in sys.path if p.endswith('lib-dynload')]}))\n";

impl Runtimes {
    /// Finds and describes every interpreter on the configured paths, from the cache when it
    /// holds them and passes its checks (see [`cache`]), else by asking each interpreter, and
    /// then rewrites the cache.
    pub fn discover(options: &RuntimeOptions) -> Result<Self, Error> {
        // Only an interpreter nobody but root can have put there or changed is run (see
        // [`trust`]); the others are listed as skipped, with the file or folder at fault.
        let mut considered = Vec::new();
        let mut refused = Vec::new();
        for path in expand_candidates(&options.candidates) {
            if !path.exists() {
                continue;
            }
            match trusted_interpreter(&path) {
                Ok(canonical) if !considered.contains(&canonical) => considered.push(canonical),
                Ok(_) => {}
                Err(reason) if !refused.contains(&reason) => refused.push(reason),
                Err(_) => {}
            }
        }
        let mut runtimes = Self::discover_checked(options, &considered)?;
        runtimes.skipped.splice(0..0, refused);
        Ok(runtimes)
    }

    /// Discovery over interpreters that passed the trust check.
    fn discover_checked(options: &RuntimeOptions, considered: &[PathBuf]) -> Result<Self, Error> {
        let key = format!(
            "{:?} {:?} {:?} {}",
            options.candidates,
            options.ldd,
            options.data_dirs,
            env!("CARGO_PKG_VERSION")
        );
        let Some(dir) = &options.cache_dir else {
            return Self::discover_now(options, considered, CacheUse::Off);
        };
        let store = cache::Cache::new(dir);
        let reason = match store.load(&key, considered) {
            Ok(cached) => {
                return Ok(Self {
                    runtimes: cached.runtimes,
                    skipped: cached.skipped,
                    cache_use: CacheUse::Hit,
                });
            }
            Err(reason) => reason,
        };
        let mut runtimes = Self::discover_now(options, considered, CacheUse::Off)?;
        runtimes.cache_use = CacheUse::Rebuilt {
            reason: match store.store(&key, considered, &runtimes.runtimes, &runtimes.skipped) {
                Ok(()) => reason,
                Err(error) => format!(
                    "{reason}; the new cache could not be written: {}",
                    error.with_causes()
                ),
            },
        };
        Ok(runtimes)
    }

    /// How this discovery used the cache.
    pub fn cache_use(&self) -> &CacheUse {
        &self.cache_use
    }

    fn discover_now(
        options: &RuntimeOptions,
        considered: &[PathBuf],
        cache_use: CacheUse,
    ) -> Result<Self, Error> {
        let mut runtimes: Vec<Runtime> = Vec::new();
        let mut skipped = Vec::new();
        for canonical in considered {
            match describe(canonical, options) {
                Ok(runtime) => {
                    // The first interpreter found for a major.minor serves it.
                    if !runtimes.iter().any(|known| known.pin == runtime.pin) {
                        runtimes.push(runtime);
                    }
                }
                Err(error) => skipped.push(error.with_causes()),
            }
        }
        runtimes.sort_by_key(|runtime| runtime.pin);
        Ok(Self {
            runtimes,
            skipped,
            cache_use,
        })
    }

    /// The runtime for `pin`, matched on major.minor exactly, or an error listing what this
    /// server has.
    pub fn get(&self, pin: PythonPin) -> Result<&Runtime, Error> {
        self.runtimes
            .iter()
            .find(|runtime| runtime.pin == pin)
            .ok_or_else(|| Error::RuntimeNotAvailable {
                requested: pin,
                available: self.describe_available(),
            })
    }

    /// All usable runtimes, by version.
    pub fn list(&self) -> &[Runtime] {
        &self.runtimes
    }

    /// Interpreters found but not usable, with the reason.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    fn describe_available(&self) -> String {
        if self.runtimes.is_empty() {
            return String::from("no usable Python interpreter");
        }
        self.runtimes
            .iter()
            .map(|runtime| format!("{} ({})", runtime.version, runtime.executable.display()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn expand_candidates(candidates: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for candidate in candidates {
        let name = candidate
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(prefix) = name.strip_suffix('*') else {
            paths.push(candidate.clone());
            continue;
        };
        let Some(dir) = candidate.parent() else {
            continue;
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut matches: Vec<PathBuf> = entries
            .flatten()
            .filter(|entry| {
                let entry_name = entry.file_name().to_string_lossy().into_owned();
                entry_name.starts_with(prefix) && is_interpreter_name(&entry_name)
            })
            .map(|entry| entry.path())
            .collect();
        matches.sort();
        paths.extend(matches);
    }
    paths
}

/// `python3` or `python3.N`; not `python3-config`, `python3.11m` or other tools.
fn is_interpreter_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("python3") else {
        return false;
    };
    match rest.strip_prefix('.') {
        None => rest.is_empty(),
        Some(minor) => !minor.is_empty() && minor.bytes().all(|byte| byte.is_ascii_digit()),
    }
}

fn describe(executable: &Path, options: &RuntimeOptions) -> Result<Runtime, Error> {
    let discovery_error = |detail: String| Error::RuntimeDiscovery {
        path: executable.to_path_buf(),
        detail,
    };
    let output = Command::new(executable)
        .args(["-I", "-S", "-c", SELF_REPORT_SCRIPT])
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .map_err(|error| discovery_error(format!("cannot run it: {error}")))?;
    if !output.status.success() {
        return Err(discovery_error(format!(
            "it exited with {} (an interpreter older than 3.10 has no sys.stdlib_module_names): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let report: SelfReport = serde_json::from_slice(&output.stdout)
        .map_err(|error| discovery_error(format!("unreadable self-report: {error}")))?;
    let mut mounts = Vec::new();
    mounts.push(RuntimeMount::File {
        source: executable.to_path_buf(),
        target: executable.to_path_buf(),
    });
    let mut elf_files = vec![executable.to_path_buf()];
    for dir in &report.dynload {
        if let Ok(entries) = std::fs::read_dir(dir) {
            let mut modules: Vec<PathBuf> = entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|extension| extension == "so"))
                .collect();
            modules.sort();
            elf_files.extend(modules);
        }
    }
    for library in shared_libraries(&options.ldd, &elf_files).map_err(discovery_error)? {
        let source = library.canonicalize().map_err(|error| {
            discovery_error(format!("cannot resolve {}: {error}", library.display()))
        })?;
        mounts.push(RuntimeMount::File {
            source,
            target: library,
        });
    }
    let mut library_dirs = vec![report.stdlib.clone()];
    let mut bound_sources: BTreeSet<PathBuf> = mounts
        .iter()
        .filter_map(|mount| match mount {
            RuntimeMount::File { source, .. } => Some(source.clone()),
            _ => None,
        })
        .collect();
    let stdlib_dirs: Vec<PathBuf> = [&report.stdlib, &report.platstdlib]
        .iter()
        .filter_map(|dir| dir.canonicalize().ok())
        .collect();
    let mut found_libgcc = false;
    for path in loaded_at_run_time(executable).map_err(discovery_error)? {
        let Ok(source) = path.canonicalize() else {
            continue;
        };
        found_libgcc |= source
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("libgcc_s.so"));
        // The standard library (lib-dynload included) is bound as a whole below.
        if source == executable || stdlib_dirs.iter().any(|dir| source.starts_with(dir)) {
            continue;
        }
        if !is_run_time_file(&source) || !bound_sources.insert(source.clone()) {
            continue;
        }
        mounts.push(RuntimeMount::File {
            target: source.clone(),
            source,
        });
    }
    if !found_libgcc {
        return Err(discovery_error(String::from(
            "the interpreter cannot load libgcc_s.so.1, which glibc needs for pthread_exit \
             (an interpreter exiting with daemon threads would abort); install libgcc-s1",
        )));
    }
    if report.platstdlib != report.stdlib {
        library_dirs.push(report.platstdlib.clone());
    }
    for dir in &report.dynload {
        if !library_dirs
            .iter()
            .any(|library_dir| dir.starts_with(library_dir))
        {
            library_dirs.push(dir.clone());
        }
    }
    for dir in library_dirs {
        let source = dir.canonicalize().map_err(|error| {
            discovery_error(format!("cannot resolve {}: {error}", dir.display()))
        })?;
        mounts.push(RuntimeMount::Dir {
            source: source.clone(),
            target: dir.clone(),
        });
        for hidden in ["site-packages", "dist-packages"] {
            if source.join(hidden).is_dir() {
                mounts.push(RuntimeMount::Mask {
                    target: dir.join(hidden),
                });
            }
        }
    }
    for data_dir in &options.data_dirs {
        if let Ok(source) = data_dir.canonicalize() {
            mounts.push(RuntimeMount::Dir {
                source,
                target: data_dir.clone(),
            });
        }
    }
    // Nothing is bound into every sandbox that someone but root could have put in place.
    for mount in &mounts {
        if let RuntimeMount::File { source, .. } | RuntimeMount::Dir { source, .. } = mount {
            trust::closed_source(source)
                .map_err(|reason| discovery_error(format!("its view would bind {reason}")))?;
        }
    }
    Ok(Runtime {
        version: report.version,
        pin: PythonPin {
            major: report.major,
            minor: report.minor,
        },
        executable: executable.to_path_buf(),
        stdlib: report.stdlib.clone(),
        stdlib_module_names: Arc::new(report.stdlib_module_names),
        mounts,
    })
}

impl Runtime {
    /// The same view with far fewer mounts: the single files (the interpreter, the loader,
    /// the shared libraries) are hard-linked once into a tree under `dir` (root's, outside any
    /// sandbox), and each directory of that tree that holds them is bound as a whole, e.g.
    /// three binds (`/usr/bin`, `/lib/x86_64-linux-gnu`, `/lib64`) instead of one per file.
    /// The tree holds exactly the files of the per-file view, so the sandbox sees the same
    /// names and contents. Like the rest of the view it is a snapshot taken at discovery: a
    /// library the host replaces later reaches sandboxes when the backend starts again.
    /// `Ok(None)` when `dir` is on another filesystem than the files (no hard links there):
    /// the per-file view is used then.
    ///
    /// A tree built by an earlier start for the same view (the same mounts, every file the
    /// same inode: a stamp beside the tree says so) is kept as it is.
    pub fn linked_view(&self, dir: &Path) -> Result<Option<Vec<RuntimeMount>>, Error> {
        let io_error = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::io(action, path, source)
        };
        let stamp = self.view_stamp()?;
        let stamp_path = dir.with_file_name(format!(
            "{}.stamp",
            dir.file_name().unwrap_or_default().to_string_lossy()
        ));
        let reuse =
            dir.is_dir() && std::fs::read_to_string(&stamp_path).is_ok_and(|text| text == stamp);
        if !reuse {
            for (path, result) in [
                (&stamp_path, std::fs::remove_file(&stamp_path)),
                (&dir.to_path_buf(), std::fs::remove_dir_all(dir)),
            ] {
                match result {
                    Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                        return Err(Error::io("cannot remove", path, error));
                    }
                    _ => {}
                }
            }
        }
        let mut groups = BTreeSet::new();
        for mount in &self.mounts {
            let RuntimeMount::File { source, target } = mount else {
                continue;
            };
            let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
                continue;
            };
            groups.insert(parent.to_path_buf());
            if reuse {
                continue;
            }
            let linked_dir = dir.join(parent.strip_prefix("/").unwrap_or(parent));
            create_view_dir(&linked_dir)?;
            match std::fs::hard_link(source, linked_dir.join(name)) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error)
                    if error.raw_os_error() == Some(libc::EXDEV)
                        || error.raw_os_error() == Some(libc::EPERM) =>
                {
                    std::fs::remove_dir_all(dir).map_err(io_error("cannot remove", dir))?;
                    return Ok(None);
                }
                Err(error) => return Err(Error::io("cannot link", source, error)),
            }
        }
        // A directory inside another bound one needs no bind of its own.
        let outermost: Vec<PathBuf> = groups
            .iter()
            .filter(|group| {
                !groups
                    .iter()
                    .any(|other| other != *group && group.starts_with(other))
            })
            .cloned()
            .collect();
        let mut mounts: Vec<RuntimeMount> = outermost
            .iter()
            .map(|group| RuntimeMount::Dir {
                source: dir.join(group.strip_prefix("/").unwrap_or(group)),
                target: group.clone(),
            })
            .collect();
        for mount in &self.mounts {
            let target = match mount {
                RuntimeMount::File { .. } => continue,
                RuntimeMount::Dir { target, .. } | RuntimeMount::Mask { target } => target,
            };
            // A mount point inside a bound (read-only) directory must exist in the tree.
            if !reuse && outermost.iter().any(|group| target.starts_with(group)) {
                create_view_dir(&dir.join(target.strip_prefix("/").unwrap_or(target)))?;
            }
            mounts.push(mount.clone());
        }
        if !reuse {
            open_view_dirs(dir)?;
            // Beside, then renamed: a stamp is there only for a complete tree.
            let temporary = stamp_path.with_extension(format!("stamp.{}", std::process::id()));
            std::fs::write(&temporary, &stamp)
                .map_err(|source| Error::io("cannot write", &temporary, source))?;
            std::fs::rename(&temporary, &stamp_path)
                .map_err(|source| Error::io("cannot rename", &stamp_path, source))?;
        }
        Ok(Some(mounts))
    }

    /// What a linked tree was built from: every mount, and each file's device and inode.
    fn view_stamp(&self) -> Result<String, Error> {
        use std::os::unix::fs::MetadataExt;
        let mut stamp = format!("stepward linked view {}\n", env!("CARGO_PKG_VERSION"));
        for mount in &self.mounts {
            stamp.push_str(&format!("{mount:?}"));
            if let RuntimeMount::File { source, .. } = mount {
                let metadata = std::fs::metadata(source)
                    .map_err(|error| Error::io("cannot inspect", source, error))?;
                stamp.push_str(&format!(" {}:{}", metadata.dev(), metadata.ino()));
            }
            stamp.push('\n');
        }
        Ok(stamp)
    }
}

/// Makes every directory of the tree searchable and readable by the sandbox users (the
/// jail's child binds from it after it took its unprivileged id), whatever the umask was.
fn open_view_dirs(dir: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
        .map_err(|source| Error::io("cannot chmod", dir, source))?;
    let entries = std::fs::read_dir(dir).map_err(|source| Error::io("cannot list", dir, source))?;
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            open_view_dirs(&entry.path())?;
        }
    }
    Ok(())
}

fn create_view_dir(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(path)
        .map_err(|source| Error::io("cannot create", path, source))
}

/// The probe that imports every `lib-dynload` module and reports what the process mapped.
const LOADED_PROBE: &str = include_str!("loaded.py");

/// Every file the interpreter maps once every `lib-dynload` module is imported, its user and
/// group looked up and `libgcc_s.so.1` loaded by name (see `loaded.py`): run with `-I -S` and
/// an empty environment, outside any sandbox.
fn loaded_at_run_time(executable: &Path) -> Result<Vec<PathBuf>, String> {
    let output = Command::new(executable)
        .args(["-I", "-S", "-c", LOADED_PROBE])
        .env_clear()
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run the run-time library probe: {error}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let last = text.lines().next_back().unwrap_or_default();
    serde_json::from_str(last).map_err(|error| {
        format!(
            "the run-time library probe exited with {} and printed no list ({error})",
            output.status
        )
    })
}

/// What of a probe run's mappings a sandbox needs too: shared objects, and the character-set
/// conversion cache glibc maps; never anything outside the system's library folders.
fn is_run_time_file(path: &Path) -> bool {
    let in_library_folder = ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"]
        .iter()
        .any(|folder| path.starts_with(folder));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let shared_object = name.ends_with(".so") || name.contains(".so.");
    in_library_folder && (shared_object || name == "gconv-modules.cache")
}

/// Every shared library (and the dynamic loader) the given ELF files need, as the paths the
/// loader resolved them to.
fn shared_libraries(ldd: &Path, files: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let output = Command::new(ldd)
        .args(files)
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run {}: {error}", ldd.display()))?;
    // ldd exits non-zero when one of many files is not dynamic; its listing is still complete.
    let text = String::from_utf8_lossy(&output.stdout);
    let mut libraries = BTreeSet::new();
    for line in text.lines() {
        if !line.starts_with('\t') {
            continue;
        }
        let line = line.trim();
        let path = match line.split_once("=>") {
            Some((_, resolved)) => resolved
                .trim()
                .split(" (")
                .next()
                .unwrap_or_default()
                .trim(),
            None => line.split(" (").next().unwrap_or_default().trim(),
        };
        if path.starts_with('/') {
            libraries.insert(PathBuf::from(path));
        }
    }
    if libraries.is_empty() {
        return Err(format!(
            "{} found no shared libraries: {}",
            ldd.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(libraries.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g7_run_time_files_are_shared_objects_in_library_folders_only() {
        assert!(is_run_time_file(Path::new(
            "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1"
        )));
        assert!(is_run_time_file(Path::new(
            "/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache"
        )));
        assert!(!is_run_time_file(Path::new("/etc/ld.so.cache")));
        assert!(!is_run_time_file(Path::new("/home/user/libevil.so")));
        assert!(!is_run_time_file(Path::new(
            "/usr/lib/locale/C.utf8/LC_CTYPE"
        )));
    }

    #[test]
    fn g8_interpreter_names_exclude_other_tools() {
        assert!(is_interpreter_name("python3"));
        assert!(is_interpreter_name("python3.11"));
        assert!(!is_interpreter_name("python3-config"));
        assert!(!is_interpreter_name("python3.11-config"));
        assert!(!is_interpreter_name("python3.11m"));
        assert!(!is_interpreter_name("python3."));
    }
}
