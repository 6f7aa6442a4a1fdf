//! The layers of the jail (issue 18 §2): every numbered step of [`crate::jail`] reports a failure
//! under exactly one of these, so a record says which wall did not go up ("setsid failed" is
//! the session layer, not "namespaces"). The names travel over the status channel as JSON and
//! end up in the attempt's error, so they are stable words, not Rust identifiers.

use serde::{Deserialize, Serialize};

/// One layer of the sandbox as the jail builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Layer {
    /// The helper itself: its plan, its poll loop (helper step 0, supervision).
    #[serde(rename = "helper")]
    Helper,
    /// Who the sandbox is: supplementary groups dropped (helper step 1), the mapped id taken
    /// (child step 3).
    #[serde(rename = "identity")]
    Identity,
    /// The network namespace: joining the platform's (helper step 2), the loopback the clone's
    /// namespace needs (child step 5b).
    #[serde(rename = "network")]
    Network,
    /// The v1 cgroups the clone inherits and the helper leaves again (helper steps 3 and 5).
    #[serde(rename = "cgroup")]
    Cgroup,
    /// The clone into new namespaces (helper step 4), the cgroup namespace made after the
    /// attach (child step 4).
    #[serde(rename = "namespaces")]
    Namespaces,
    /// setgroups deny and the single-line uid/gid maps (helper step 6).
    #[serde(rename = "uid/gid maps")]
    UidGidMaps,
    /// The release pipe between helper and child (helper step 7, child step 2).
    #[serde(rename = "release")]
    Release,
    /// The parent-death signal, before and after the id change (child steps 1 and 3).
    #[serde(rename = "parent death signal")]
    ParentDeathSignal,
    /// The hostname that says nothing about the host (child step 5).
    #[serde(rename = "hostname")]
    Hostname,
    /// Private propagation, the tmpfs root, the binds and tmpfs mounts, the read-only root and
    /// the working directory (child steps 6, 7, 8 and 11).
    #[serde(rename = "mounts")]
    Mounts,
    /// The sandbox's own `/proc` and its masks (child step 8).
    #[serde(rename = "proc")]
    Proc,
    /// The small files of `/etc` (child step 9).
    #[serde(rename = "files")]
    Files,
    /// pivot_root into the new root, the old one detached (child step 10).
    #[serde(rename = "pivot_root")]
    PivotRoot,
    /// Every descriptor but stdio and the report channel closed at exec (child step 12).
    #[serde(rename = "descriptors")]
    Descriptors,
    /// A session of its own, no controlling terminal (child step 13).
    #[serde(rename = "session")]
    Session,
    /// The resource limits (child step 14).
    #[serde(rename = "rlimits")]
    Rlimits,
    /// The bounding set and every other capability set emptied (child steps 15 and 16).
    #[serde(rename = "capabilities")]
    Capabilities,
    /// PR_SET_NO_NEW_PRIVS (child step 17).
    #[serde(rename = "no_new_privs")]
    NoNewPrivs,
    /// The seccomp filter, loaded last (child step 19).
    #[serde(rename = "seccomp")]
    Seccomp,
    /// The exec of Python (child step 20).
    #[serde(rename = "exec")]
    Exec,
}

impl Layer {
    /// The name a person reads in an error ("the sandbox's session layer failed").
    pub fn name(self) -> &'static str {
        match self {
            Layer::Helper => "helper",
            Layer::Identity => "identity",
            Layer::Network => "network",
            Layer::Cgroup => "cgroup",
            Layer::Namespaces => "namespaces",
            Layer::UidGidMaps => "uid/gid maps",
            Layer::Release => "release",
            Layer::ParentDeathSignal => "parent death signal",
            Layer::Hostname => "hostname",
            Layer::Mounts => "mounts",
            Layer::Proc => "proc",
            Layer::Files => "files",
            Layer::PivotRoot => "pivot_root",
            Layer::Descriptors => "descriptors",
            Layer::Session => "session",
            Layer::Rlimits => "rlimits",
            Layer::Capabilities => "capabilities",
            Layer::NoNewPrivs => "no_new_privs",
            Layer::Seccomp => "seccomp",
            Layer::Exec => "exec",
        }
    }
}

impl std::fmt::Display for Layer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Layer;

    const ALL: [Layer; 20] = [
        Layer::Helper,
        Layer::Identity,
        Layer::Network,
        Layer::Cgroup,
        Layer::Namespaces,
        Layer::UidGidMaps,
        Layer::Release,
        Layer::ParentDeathSignal,
        Layer::Hostname,
        Layer::Mounts,
        Layer::Proc,
        Layer::Files,
        Layer::PivotRoot,
        Layer::Descriptors,
        Layer::Session,
        Layer::Rlimits,
        Layer::Capabilities,
        Layer::NoNewPrivs,
        Layer::Seccomp,
        Layer::Exec,
    ];

    /// The name on the status channel is the name in the error, for every layer, and no two
    /// layers share one.
    #[test]
    fn g10_a_layer_travels_under_the_name_a_person_reads() {
        let mut seen = std::collections::HashSet::new();
        for layer in ALL {
            let wire = serde_json::to_string(&layer).unwrap();
            assert_eq!(wire, format!("\"{}\"", layer.name()));
            assert_eq!(serde_json::from_str::<Layer>(&wire).unwrap(), layer);
            assert!(seen.insert(layer.name()), "{layer:?} shares its name");
        }
    }
}
