//! No door widens a saved workflow's reach silently (G27, agents review finding 3): a write of
//! an agent file, or of a script an agent file names, changes what every saved workflow whose
//! agents (or their colleagues, at any depth) include that agent may reach or run. Before such
//! a write lands, the engine lists each affected workflow with its reach rows before and after
//! and the scripts that change; the write needs the writer's confirmation of each, by name, or
//! is refused with the list (every door goes through [`Engine::write_definitions_confirming`]).

use std::collections::BTreeMap;

use storage::AccountId;
use workspace::{Change, RelPath, Workspace};

use crate::engine::Engine;

/// One saved workflow a write would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffectedWorkflow {
    /// The workflow's name (`workflows/NAME.yaml`).
    pub workflow: String,
    /// Each reach row that changes, as `step: before → after`, in words.
    pub rows: Vec<String>,
    /// The scripts an agent of the workflow names that the write changes.
    pub scripts: Vec<String>,
}

impl std::fmt::Display for AffectedWorkflow {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "workflow {}", self.workflow)?;
        for row in &self.rows {
            write!(formatter, "; {row}")?;
        }
        if !self.scripts.is_empty() {
            write!(
                formatter,
                "; its scripts change: {}",
                self.scripts.join(", ")
            )?;
        }
        Ok(())
    }
}

/// A reach row in one line of words.
fn row_words(row: &spec::ReachRow) -> String {
    let internet = match &row.internet {
        spec::ReachInternet::Yes => "internet yes".to_owned(),
        spec::ReachInternet::No => "internet no".to_owned(),
        spec::ReachInternet::Unknown { reason } => format!("internet unknown ({reason})"),
    };
    let list = |items: Vec<String>| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join(", ")
        }
    };
    let secrets = list(
        row.secret_holders
            .iter()
            .map(|(secret, agent)| format!("{secret} ({agent})"))
            .collect(),
    );
    let models = list(
        row.models
            .iter()
            .map(|model| match &model.provider {
                Some(provider) => format!("{provider}/{}", model.model),
                None => model.model.clone(),
            })
            .collect(),
    );
    format!(
        "{internet}, secrets {secrets}, colleagues {}, models {models}",
        list(row.colleagues.clone())
    )
}

/// The agent folder (`agents/NAME/...`) a path is in.
fn agent_of(path: &RelPath) -> Option<&str> {
    let mut components = path.components();
    (components.next() == Some("agents")).then(|| components.next())?
}

impl Engine {
    /// The saved workflows of `account` (but `except`) that writing `changes` would change: see
    /// the module docs. A workflow that does not parse is skipped (it cannot run).
    pub fn affected_workflows(
        &self,
        account: &AccountId,
        workspace: &Workspace,
        changes: &[(RelPath, Change)],
        except: Option<&str>,
    ) -> Vec<AffectedWorkflow> {
        let touched: Vec<&str> = changes
            .iter()
            .filter_map(|(path, _)| agent_of(path))
            .collect();
        if touched.is_empty() {
            return Vec::new();
        }
        let Ok(tree) = workspace.step_files().reader() else {
            return Vec::new();
        };
        let maxima = spec::LimitMaxima::UNBOUNDED;
        let read = |path: &str| -> Option<String> {
            let path = RelPath::parse(path).ok()?;
            let (bytes, _) = tree.read(&path, 0, 1024 * 1024).ok()?;
            String::from_utf8(bytes).ok()
        };
        let changed = |path: &str| -> Option<Option<String>> {
            changes
                .iter()
                .find(|(candidate, _)| candidate.as_str().eq_ignore_ascii_case(path))
                .map(|(_, change)| match change {
                    Change::Write(bytes) => String::from_utf8(bytes.clone()).ok(),
                    Change::Delete => None,
                })
        };
        let parse = |name: &str, text: Option<String>| {
            text.and_then(|text| {
                spec::parse_agent_within(&format!("agents/{name}/AGENT.md"), &text, &maxima).ok()
            })
        };
        let before = |name: &str| parse(name, read(&format!("agents/{name}/AGENT.md")));
        let after = |name: &str| {
            let path = format!("agents/{name}/AGENT.md");
            parse(name, changed(&path).unwrap_or_else(|| read(&path)))
        };
        let workflows = match RelPath::parse("workflows")
            .ok()
            .and_then(|folder| tree.walk(Some(&folder), 4096).ok())
        {
            Some((entries, _)) => entries,
            None => Vec::new(),
        };
        let _ = account;
        let mut affected = Vec::new();
        for entry in workflows.iter().filter(|entry| entry.kind == "file") {
            let Some(name) = entry
                .path
                .as_str()
                .strip_prefix("workflows/")
                .and_then(|file| file.strip_suffix(".yaml"))
            else {
                continue;
            };
            if Some(name) == except || name.contains('/') {
                continue;
            }
            let Some(text) = read(entry.path.as_str()) else {
                continue;
            };
            let Ok(workflow) = spec::parse_workflow_within(entry.path.as_str(), &text, &maxima)
            else {
                continue;
            };
            let rows_before = spec::reach(&workflow, &before);
            let rows_after = spec::reach(&workflow, &after);
            let rows: Vec<String> = rows_before
                .iter()
                .zip(&rows_after)
                .filter(|(old, new)| old != new)
                .map(|(old, new)| {
                    format!("step {}: {} → {}", new.step, row_words(old), row_words(new))
                })
                .collect();
            // The agents the workflow reaches before or after the write, and the scripts they
            // name after it.
            let mut reached: BTreeMap<String, Option<spec::Agent>> = BTreeMap::new();
            for row in rows_before.iter().chain(&rows_after) {
                if let spec::ReachKind::Agent { agent } = &row.kind {
                    for member in std::iter::once(agent).chain(&row.colleagues) {
                        reached.insert(member.clone(), after(member));
                    }
                }
            }
            let scripts: Vec<String> = reached
                .iter()
                .filter_map(|(name, agent)| agent.as_ref().map(|agent| (name, agent)))
                .flat_map(|(name, agent)| {
                    agent
                        .custom_tools()
                        .iter()
                        .map(move |tool| format!("agents/{name}/{}", tool.script()))
                })
                .filter(|script| changed(script).is_some())
                .collect();
            let touches_it = reached.keys().any(|name| touched.contains(&name.as_str()));
            if touches_it && (!rows.is_empty() || !scripts.is_empty()) {
                affected.push(AffectedWorkflow {
                    workflow: name.to_owned(),
                    rows,
                    scripts,
                });
            }
        }
        affected
    }
}
