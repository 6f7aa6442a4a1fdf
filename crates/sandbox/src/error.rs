//! The crate's one error type. Every variant carries what a person needs to act on it: the
//! path, the layer, the version asked for and those available.

use std::path::PathBuf;

/// Why an invocation could not be run as the policy requires. The sandbox never degrades to a
/// weaker isolation instead: each of these stops the step (fail closed).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The workflow pins a Python version this server does not have (G8).
    #[error("this server has no Python {requested}; it has: {available}")]
    RuntimeNotAvailable {
        requested: crate::PythonPin,
        /// Exact versions with their paths, e.g. "3.11.2 (/usr/bin/python3.11)".
        available: String,
    },
    /// An interpreter found on the configured paths could not be described.
    #[error("cannot use the interpreter {path}: {detail}")]
    RuntimeDiscovery { path: PathBuf, detail: String },
    /// A file or directory operation of the platform failed.
    #[error("{action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A resource-limit controller has no hierarchy on this host; limits are mandatory.
    #[error(
        "the cgroup controller `{controller}` is available neither in cgroup v2 nor v1 under {root}; memory, pids and cpu limits are mandatory"
    )]
    CgroupControllerMissing {
        controller: &'static str,
        root: PathBuf,
    },
    /// Every sandbox slot (host uid and address) is in use.
    #[error("all {count} sandbox slots under {dir} are in use")]
    SlotsExhausted { dir: PathBuf, count: u32 },
    /// The jail helper could not be started.
    #[error("cannot start the jail helper {helper}")]
    HelperSpawn {
        helper: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A mandatory isolation layer could not be set up; the step did not run.
    #[error("the sandbox's {layer} layer failed: {detail}")]
    LayerFailed { layer: String, detail: String },
    /// The helper broke its protocol with the platform (it is trusted, so this is a bug or a
    /// host problem, never the step's doing).
    #[error("the jail helper broke its protocol: {detail}")]
    HelperProtocol { detail: String },
    /// The plan handed to the helper could not be encoded or decoded.
    #[error("the jail plan could not be {action}")]
    Plan {
        action: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// Staging the folder in, or collecting the copy-back, failed as a whole.
    #[error(transparent)]
    CopyBack(#[from] crate::copyback::Error),
    /// The egress network for a `public_egress` step could not be built.
    #[error("the egress network could not be built")]
    Net(#[from] crate::net::Error),
}

impl Error {
    /// The error and every cause under it, each stated once ("the egress network could not be
    /// built: cannot open `/proc/…`: Permission denied"): what a record or a log line shows.
    pub fn with_causes(&self) -> String {
        let mut text = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(next) = cause {
            text.push_str(": ");
            text.push_str(&next.to_string());
            cause = next.source();
        }
        text
    }

    /// Shorthand for an [`Error::Io`] with its path.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    /// Issue 18 §2: a nested error states each cause once, so its printed chain never repeats
    /// one.
    #[test]
    fn a_nested_sandbox_error_names_each_cause_once() {
        let nested = Error::Net(crate::net::Error::Io {
            action: "cannot open",
            path: std::path::PathBuf::from("/proc/self/ns/net"),
            source: std::io::Error::from_raw_os_error(libc::EACCES),
        });
        let chain = nested.with_causes();
        assert!(
            chain.starts_with(
                "the egress network could not be built: cannot open `/proc/self/ns/net`: "
            ),
            "{chain}"
        );
        for cause in [
            "could not be built",
            "/proc/self/ns/net",
            "ermission denied",
        ] {
            assert_eq!(chain.matches(cause).count(), 1, "{cause} in {chain}");
        }
        let copy_back = Error::CopyBack(crate::copyback::Error::Io {
            operation: "cannot read",
            path: std::path::PathBuf::from("/scratch/work/a"),
            source: std::io::Error::from_raw_os_error(libc::EIO),
        });
        let chain = copy_back.with_causes();
        assert_eq!(chain.matches("/scratch/work/a").count(), 1, "{chain}");
        assert_eq!(chain.matches("copy-back").count(), 1, "{chain}");
    }
}
