//! An agent step's view: the agent's folder, the workspace's `shared/` and the account's
//! `library/`, staged into a scratch folder of the step's own, handed to the file-tool helper's
//! unprivileged user, with the pinned agent file and scripts laid over it; and what changed in
//! it when the step ends, measured and screened before it is read (G12, G22).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use engine::{FileChange, PinnedDefinitions};
use sha2::{Digest, Sha256};
use workspace::{AgentView, RelPath, StepWriterRules, Tree};

use crate::agent_step::{HELPER_USER, RESERVED};

/// The agent's view, staged into a scratch folder of its own; removed when dropped.
pub(crate) struct View {
    dir: PathBuf,
    pub(crate) root: PathBuf,
    agent: String,
    /// Each staged file's hash, by view path.
    original: BTreeMap<String, [u8; 32]>,
    /// Its file-tool helpers' cell: a uid no other view or sandbox has, and a group with a
    /// memory and a task limit (dropped after the folder is removed).
    pub(crate) cell: sandbox::HelperCell,
}

impl Drop for View {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn io(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> String {
    let text = format!("{what} {}", path.display());
    move |error| format!("{text}: {error}")
}

impl View {
    pub(crate) fn stage(
        views_dir: &Path,
        files: &workspace::StepFiles,
        agent: &str,
        cell: sandbox::HelperCell,
    ) -> Result<View, String> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(views_dir).map_err(io("cannot create", views_dir))?;
        std::fs::set_permissions(views_dir, std::fs::Permissions::from_mode(0o711))
            .map_err(io("cannot set the mode of", views_dir))?;
        let mut random = [0u8; 12];
        getrandom::fill(&mut random).map_err(|error| error.to_string())?;
        let dir = views_dir.join(hex::encode(random));
        std::fs::create_dir(&dir).map_err(io("cannot create", &dir))?;
        let root = dir.join("work");
        std::fs::create_dir(&root).map_err(io("cannot create", &root))?;
        let mut view = View {
            dir,
            root,
            agent: agent.to_owned(),
            original: BTreeMap::new(),
            cell,
        };
        let source = files.reader().map_err(|error| error.to_string())?;
        let target = Tree::open(&view.root).map_err(|error| error.to_string())?;
        let agent_folder = RelPath::parse(&format!("agents/{agent}")).map_err(|e| e.to_string())?;
        let (entries, _) = source
            .walk(Some(&agent_folder), workspace::MAX_LISTED_ENTRIES)
            .map_err(|error| format!("the agent's folder cannot be read: {error}"))?;
        for entry in &entries {
            let relative = entry
                .path
                .as_str()
                .strip_prefix(&format!("{agent_folder}/"))
                .unwrap_or_default();
            if RESERVED.contains(&relative) {
                return Err(format!(
                    "the agent folder agents/{agent} holds `{relative}`, a name the agent's tree \
                     keeps for the workspace's `{relative}/`; rename it"
                ));
            }
        }
        let mut copy = |from: &RelPath, to: &str| -> Result<(), String> {
            let to = RelPath::parse(to).map_err(|e| e.to_string())?;
            if workspace::is_protected(&to).is_some() {
                return Ok(());
            }
            let (bytes, _) = source
                .read(from, 0, 64 * 1024 * 1024)
                .map_err(|error| error.to_string())?;
            target
                .write(&to, &bytes)
                .map_err(|error| error.to_string())?;
            view.original
                .insert(to.to_string(), Sha256::digest(&bytes).into());
            Ok(())
        };
        for entry in entries.iter().filter(|entry| entry.kind == "file") {
            let relative = entry
                .path
                .as_str()
                .strip_prefix(&format!("{agent_folder}/"))
                .unwrap_or_default()
                .to_owned();
            copy(&entry.path, &relative)?;
        }
        for folder in RESERVED {
            let Ok(folder) = RelPath::parse(folder) else {
                continue;
            };
            if source.kind(&folder).ok() != Some("folder") {
                continue;
            }
            let (entries, _) = source
                .walk(Some(&folder), workspace::MAX_LISTED_ENTRIES)
                .map_err(|error| error.to_string())?;
            for entry in entries.iter().filter(|entry| entry.kind == "file") {
                copy(&entry.path, entry.path.as_str())?;
            }
        }
        view.hand_to_helper()?;
        Ok(view)
    }

    /// The user its file-tool helpers run as when the platform is root: the cell's own, or,
    /// where the backend gives none (`unisolated`), the shared unprivileged one.
    pub(crate) fn helper_user(&self) -> Option<(u32, u32)> {
        if !rustix::process::geteuid().is_root() {
            return None;
        }
        Some(self.cell.user().unwrap_or(HELPER_USER))
    }

    /// Makes the view the helper's (an unprivileged user): only it and root can reach it.
    pub(crate) fn hand_to_helper(&self) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let Some((uid, gid)) = self.helper_user() else {
            return Ok(());
        };
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io("cannot set the mode of", &self.dir))?;
        std::os::unix::fs::lchown(&self.dir, Some(uid), Some(gid))
            .map_err(io("cannot hand over", &self.dir))?;
        std::os::unix::fs::lchown(&self.root, Some(uid), Some(gid))
            .map_err(io("cannot hand over", &self.root))?;
        let tree = Tree::open(&self.root).map_err(|error| error.to_string())?;
        let (entries, _) = tree
            .walk(None, workspace::MAX_LISTED_ENTRIES)
            .map_err(|error| error.to_string())?;
        for entry in entries {
            if entry.kind == "file" || entry.kind == "folder" {
                let path = self.root.join(entry.path.as_path());
                std::os::unix::fs::lchown(&path, Some(uid), Some(gid))
                    .map_err(io("cannot hand over", &path))?;
            }
        }
        Ok(())
    }

    /// Replaces the agent file and every script it names with the bytes the run pinned (a
    /// script the pin lacks is removed from the view, so no tool runs what was added later).
    pub(crate) fn overlay_pinned(
        &mut self,
        definitions: &PinnedDefinitions,
        agent: &spec::Agent,
    ) -> Result<(), String> {
        if !definitions.is_pinned() {
            return Ok(());
        }
        let tree = Tree::open(&self.root).map_err(|error| error.to_string())?;
        let mut files = vec!["AGENT.md".to_owned()];
        files.extend(
            agent
                .custom_tools()
                .iter()
                .map(|tool| tool.script().to_owned()),
        );
        for relative in files {
            let path = RelPath::parse(&relative).map_err(|e| e.to_string())?;
            match definitions.agent_file(&self.agent, &relative)? {
                Some(bytes) => {
                    tree.write(&path, &bytes)
                        .map_err(|error| error.to_string())?;
                    self.original
                        .insert(path.to_string(), Sha256::digest(&bytes).into());
                }
                None => {
                    let host = self.root.join(path.as_path());
                    if std::fs::symlink_metadata(&host).is_ok() {
                        std::fs::remove_file(&host).map_err(io("cannot remove", &host))?;
                    }
                    self.original.remove(path.as_str());
                }
            }
        }
        self.hand_to_helper()
    }

    pub(crate) fn read_original(&self, script: &str) -> Result<Vec<u8>, String> {
        let path = RelPath::parse(script).map_err(|e| e.to_string())?;
        let tree = Tree::open(&self.root).map_err(|error| error.to_string())?;
        tree.read(&path, 0, 4 * 1024 * 1024)
            .map(|(bytes, _)| bytes)
            .map_err(|error| {
                format!(
                    "the script {script} of agent {} cannot be read: {error}",
                    self.agent
                )
            })
    }

    /// What changed in the view, as workspace files; what may not go back is refused here
    /// already, by name with its reason (the engine checks again). A file is measured before
    /// it is read: past the per-file cap, or past the step's bytes, it is refused unread.
    pub(crate) fn changes(
        &self,
        agent: &spec::Agent,
        caps: engine::CopyBackCaps,
    ) -> (Vec<FileChange>, Vec<engine::CopyBackRefusal>) {
        let mut changes = Vec::new();
        let mut refusals = Vec::new();
        let Ok(tree) = Tree::open(&self.root) else {
            return (changes, refusals);
        };
        let mut unnamed = Vec::new();
        let Ok((entries, cut)) =
            tree.walk_noting(None, workspace::MAX_LISTED_ENTRIES, &mut unnamed)
        else {
            return (changes, refusals);
        };
        for name in unnamed {
            refusals.push(engine::CopyBackRefusal {
                path: name,
                reason: "its name cannot be a workspace path (a control or bidirectional \
                         formatting character, not UTF-8, or too long)"
                    .to_owned(),
            });
        }
        if cut {
            refusals.push(engine::CopyBackRefusal {
                path: "(the rest of the tree)".to_owned(),
                reason: format!(
                    "the tree holds more than {} entries; the rest were not looked at",
                    workspace::MAX_LISTED_ENTRIES
                ),
            });
        }
        let mut read_bytes = 0u64;
        let view = AgentView::new(&self.agent);
        let scripts = agent.custom_tools().iter().filter_map(|tool| {
            RelPath::parse(&format!("agents/{}/{}", agent.name(), tool.script())).ok()
        });
        let rules = StepWriterRules::new(scripts);
        for entry in entries {
            if entry.kind != "file" {
                if entry.kind != "folder" {
                    refusals.push(engine::CopyBackRefusal {
                        path: entry.path.to_string(),
                        reason: format!("it is a {}; only regular files come back", entry.kind),
                    });
                }
                continue;
            }
            if entry.size > caps.max_file_bytes {
                refusals.push(engine::CopyBackRefusal {
                    path: entry.path.to_string(),
                    reason: format!(
                        "the file is {} bytes; a step may return files of at most {} bytes",
                        entry.size, caps.max_file_bytes
                    ),
                });
                continue;
            }
            if read_bytes.saturating_add(entry.size) > caps.max_total_bytes {
                refusals.push(engine::CopyBackRefusal {
                    path: entry.path.to_string(),
                    reason: format!(
                        "the step returned more than {} bytes in all; the rest are refused",
                        caps.max_total_bytes
                    ),
                });
                continue;
            }
            let Ok((bytes, size)) = tree.read(&entry.path, 0, caps.max_file_bytes + 1) else {
                refusals.push(engine::CopyBackRefusal {
                    path: entry.path.to_string(),
                    reason: "it could not be read as one regular file".to_owned(),
                });
                continue;
            };
            // Grown since it was measured: refused, never cut.
            if size > caps.max_file_bytes || bytes.len() as u64 != size {
                refusals.push(engine::CopyBackRefusal {
                    path: entry.path.to_string(),
                    reason: format!(
                        "the file changed size while it was read, or is over {} bytes",
                        caps.max_file_bytes
                    ),
                });
                continue;
            }
            read_bytes = read_bytes.saturating_add(size);
            let hash: [u8; 32] = Sha256::digest(&bytes).into();
            if self.original.get(entry.path.as_str()) == Some(&hash) {
                continue;
            }
            let Ok(target) = view.to_workspace(&entry.path) else {
                continue;
            };
            if let Some(refusal) = rules.refusal(&target) {
                refusals.push(engine::CopyBackRefusal {
                    path: target.to_string(),
                    reason: format!("{refusal}; no step may write it"),
                });
                continue;
            }
            changes.push(FileChange::write(target, bytes));
        }
        (changes, refusals)
    }
}

/// Removes views a crash left behind (at start, under the engine lock).
pub fn sweep_views(views_dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(views_dir) {
        for entry in entries.flatten() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
