//! Definitions move into the accounts' workspaces (issue 16 §1): a data directory from before
//! kept each account's workflows and agents beside its workspace, in
//! `accounts/<account>/{workflows,agents}/`, where no revision recorded who changed them and
//! agent steps did not look. On open, each account's two folders become one revision of its
//! workspace authored by the platform, and the folders go.
//!
//! Idempotent: a file whose bytes the workspace already holds at the same path is not written
//! again, so a move that stopped between the revision and the removal finishes on the next
//! open without a second revision. A file the workspace holds with other bytes, or one the
//! workspace refuses (it holds a current value of the account), is never overwritten or lost:
//! it is kept under `accounts/<account>/older-layout/` and named on stderr. Links are neither
//! followed nor moved.

use std::path::Path;

use anyhow::Context;
use redact::ScrubSets;
use storage::AccountId;
use workspace::{Author, Change, RelPath, Tree, Workspaces};

/// Where files that could not move in are kept, inside the account's folder.
pub const KEPT_ASIDE: &str = "older-layout";

/// The older layout's definition folders, relative to the account's folder.
const OLD_FOLDERS: &[&str] = &["workflows", "agents"];

/// Moves every account's older definition folders into its workspace; returns what it said.
pub fn move_definitions_into_workspaces(
    accounts_dir: &Path,
    workspaces: &Workspaces,
    scrub_sets: &ScrubSets,
) -> anyhow::Result<Vec<String>> {
    let mut said = Vec::new();
    let Ok(entries) = std::fs::read_dir(accounts_dir) else {
        return Ok(said);
    };
    let mut accounts: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
        .collect();
    accounts.sort();
    for account in accounts {
        let folder = accounts_dir.join(&account);
        if !OLD_FOLDERS.iter().any(|old| folder.join(old).is_dir()) {
            continue;
        }
        // Not an account's folder: its name cannot be an account id.
        let Ok(account) = AccountId::parse(&account) else {
            continue;
        };
        let Ok(workspace) = workspaces.for_account(&account) else {
            continue;
        };
        said.extend(move_account(&account, &folder, &workspace, scrub_sets)?);
    }
    Ok(said)
}

fn move_account(
    account: &AccountId,
    folder: &Path,
    workspace: &workspace::Workspace,
    scrub_sets: &ScrubSets,
) -> anyhow::Result<Vec<String>> {
    let mut said = Vec::new();
    let old = Tree::open(folder).map_err(|error| anyhow::anyhow!("{error}"))?;
    let mut changes: Vec<(RelPath, Vec<u8>)> = Vec::new();
    let mut aside: Vec<(RelPath, &'static str)> = Vec::new();
    for name in OLD_FOLDERS {
        let Ok(start) = RelPath::parse(name) else {
            continue;
        };
        if old.kind(&start).ok() != Some("folder") {
            continue;
        }
        let (entries, _) = old
            .walk(Some(&start), workspace::MAX_LISTED_ENTRIES)
            .map_err(|error| anyhow::anyhow!("{error}"))?;
        for entry in entries.into_iter().filter(|entry| entry.kind == "file") {
            let (bytes, _) = old
                .read(&entry.path, 0, 64 * 1024 * 1024)
                .map_err(|error| anyhow::anyhow!("{error}"))?;
            match workspace.read_file(&entry.path, 64 * 1024 * 1024)? {
                Some(there) if there.bytes == bytes => {}
                Some(_) => {
                    aside.push((entry.path, "the workspace holds another file at that path"))
                }
                None => changes.push((entry.path, bytes)),
            }
        }
    }
    let redactor = scrub_sets
        .for_account(account)
        .with_context(|| format!("cannot read the values of account {account}"))?;
    let author = Author::Platform {
        reason: format!("moved from accounts/{account}/workflows and agents into the workspace"),
    };
    // A file the workspace refuses is set aside and the rest tried again: nothing is lost.
    while !changes.is_empty() {
        let revision = workspace.commit(
            &author,
            "the account's workflows and agents, moved into the workspace",
            changes
                .iter()
                .map(|(path, bytes)| (path.clone(), Change::Write(bytes.clone())))
                .collect(),
            &|content: &[u8]| redactor.holds_secret(content),
        );
        match revision {
            Ok(revision) => {
                said.push(format!(
                    "moved {} definition file(s) of account {account} into its workspace \
                     (revision {})",
                    changes.len(),
                    revision.id
                ));
                break;
            }
            Err(
                workspace::Error::HoldsSecret { path }
                | workspace::Error::Unscreenable { path, .. }
                | workspace::Error::PathConflict { path, .. },
            ) => {
                let Some(index) = changes.iter().position(|(p, _)| p.as_str() == path) else {
                    return Err(anyhow::anyhow!(
                        "the workspace of account {account} refused {path}"
                    ));
                };
                let (refused, _) = changes.remove(index);
                aside.push((refused, "the workspace refused it"));
            }
            Err(error) => {
                return Err(error).with_context(|| {
                    format!("cannot move the definitions of account {account} into its workspace")
                });
            }
        }
    }
    for (path, why) in &aside {
        let from = folder.join(path.as_path());
        let to = folder.join(KEPT_ASIDE).join(path.as_path());
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::rename(&from, &to)
            .with_context(|| format!("cannot keep {} aside", from.display()))?;
        said.push(format!(
            "kept {} aside as {} ({why}); move what you still need into the workspace with \
             `stepward files put`",
            from.display(),
            to.display()
        ));
    }
    for name in OLD_FOLDERS {
        let old_folder = folder.join(name);
        if old_folder.is_dir() {
            std::fs::remove_dir_all(&old_folder)
                .with_context(|| format!("cannot remove {}", old_folder.display()))?;
        }
    }
    Ok(said)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn sets() -> ScrubSets {
        let source = redact::testing::MemorySource::new();
        source.set_secret("local", "TOKEN", "sk_live_LayoutTest7Hq2Vb9Nx");
        ScrubSets::new(Arc::new(source))
    }

    /// A data directory as today's main leaves it: workflows and agents beside the workspace.
    fn older_layout(accounts: &Path) {
        let local = accounts.join("local");
        std::fs::create_dir_all(local.join("workflows")).unwrap();
        std::fs::create_dir_all(local.join("agents/digest/tools")).unwrap();
        std::fs::write(local.join("workflows/refund.yaml"), "name: refund\n").unwrap();
        std::fs::write(local.join("agents/digest/AGENT.md"), "---\nname: digest\n").unwrap();
        std::fs::write(
            local.join("agents/digest/tools/notes.py"),
            "def main(): pass\n",
        )
        .unwrap();
        std::fs::write(
            local.join("workflows/leaky.yaml"),
            "token: sk_live_LayoutTest7Hq2Vb9Nx\n",
        )
        .unwrap();
        std::os::unix::fs::symlink("/etc/passwd", local.join("agents/digest/link")).unwrap();
    }

    #[test]
    fn g25_the_older_layouts_definitions_move_in_as_one_revision_by_the_platform_once() {
        let root = tempfile::tempdir().unwrap();
        let accounts = root.path().join("accounts");
        older_layout(&accounts);
        let workspaces = Workspaces::new(&accounts);
        // A file the workspace already holds with other bytes is the workspace's.
        let workspace = workspaces
            .for_account(&AccountId::parse("local").unwrap())
            .unwrap();
        workspace
            .commit(
                &Author::Person { id: "p".into() },
                "mine",
                vec![(
                    RelPath::parse("agents/digest/tools/notes.py").unwrap(),
                    Change::Write(b"the person's".to_vec()),
                )],
                &|_: &[u8]| false,
            )
            .unwrap();
        let said = move_definitions_into_workspaces(&accounts, &workspaces, &sets()).unwrap();
        assert_eq!(said.len(), 3, "{said:?}");
        let history = workspace.history().unwrap();
        assert_eq!(history.len(), 2);
        let moved = &history[1];
        assert!(matches!(moved.author, Author::Platform { .. }));
        let paths: Vec<&str> = moved.changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            vec!["agents/digest/AGENT.md", "workflows/refund.yaml"]
        );
        let local = accounts.join("local");
        assert!(!local.join("workflows").exists() && !local.join("agents").exists());
        // Nothing is lost: the conflicting and the refused file are kept aside.
        assert_eq!(
            std::fs::read_to_string(local.join("older-layout/agents/digest/tools/notes.py"))
                .unwrap(),
            "def main(): pass\n"
        );
        assert!(local.join("older-layout/workflows/leaky.yaml").exists());
        assert_eq!(
            workspace
                .read_file(
                    &RelPath::parse("agents/digest/tools/notes.py").unwrap(),
                    1024
                )
                .unwrap()
                .unwrap()
                .bytes,
            b"the person's"
        );
        // Once: a second open finds nothing to move.
        let again = move_definitions_into_workspaces(&accounts, &workspaces, &sets()).unwrap();
        assert!(again.is_empty(), "{again:?}");
        assert_eq!(workspace.history().unwrap().len(), 2);
    }

    #[test]
    fn g25_a_move_that_stopped_before_the_removal_finishes_without_a_second_revision() {
        let root = tempfile::tempdir().unwrap();
        let accounts = root.path().join("accounts");
        let local = accounts.join("local");
        std::fs::create_dir_all(local.join("workflows")).unwrap();
        std::fs::write(local.join("workflows/refund.yaml"), "name: refund\n").unwrap();
        let workspaces = Workspaces::new(&accounts);
        let workspace = workspaces
            .for_account(&AccountId::parse("local").unwrap())
            .unwrap();
        // The revision was written, the old folder not yet removed.
        workspace
            .commit(
                &Author::Platform {
                    reason: "moved".into(),
                },
                "moved",
                vec![(
                    RelPath::parse("workflows/refund.yaml").unwrap(),
                    Change::Write(b"name: refund\n".to_vec()),
                )],
                &|_: &[u8]| false,
            )
            .unwrap();
        move_definitions_into_workspaces(&accounts, &workspaces, &sets()).unwrap();
        assert_eq!(workspace.history().unwrap().len(), 1);
        assert!(!local.join("workflows").exists());
    }
}
