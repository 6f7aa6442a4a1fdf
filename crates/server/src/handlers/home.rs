//! What the home page shows first (issue 42, point 3): what needs me. The gates I may decide,
//! the runs that failed or wait for a person, and the account's recent runs, each a line that
//! leads to its run; the console's pages follow.

use storage::{RunFilter, RunRecord, RunStatus};

use crate::Error;
use crate::authn::Authenticated;
use crate::chrome;
use crate::handlers::run_view::{Status, who};
use crate::state::Shared;

/// How many lines each part of the home page shows.
const LINES: usize = 8;

/// One line of the home page: where it leads, what it says, and when.
pub(crate) struct HomeLine {
    pub(crate) href: String,
    pub(crate) text: String,
    pub(crate) status: Option<Status>,
    pub(crate) when: crate::html::Moment,
}

/// What needs the person, and what happened lately.
pub(crate) struct NeedsMe {
    /// `None`: the person's role decides no gate.
    pub(crate) waiting: Option<Vec<HomeLine>>,
    pub(crate) failing: Vec<HomeLine>,
    pub(crate) recent: Vec<HomeLine>,
}

pub(crate) fn needs_me(shared: &Shared, authenticated: &Authenticated) -> Result<NeedsMe, Error> {
    let account = authenticated.account();
    // One clock reading for the page, so every line's "ago" is counted from the same moment.
    let now = shared.now().0;
    let may_decide = chrome::may(
        &authenticated.principal,
        "POST",
        "/runs/{id}/steps/{step}/decide",
    );
    let waiting = if may_decide {
        let (gates, _) = crate::handlers::runs::waiting_gates_page(shared, &account, None, LINES)?;
        Some(
            gates
                .into_iter()
                .map(|gate| HomeLine {
                    href: format!("/runs/{}#gate", gate.run),
                    text: format!(
                        "{} #{} waits for a decision at {}",
                        gate.workflow, gate.number, gate.step
                    ),
                    status: None,
                    when: crate::html::moment(gate.waiting_since, now),
                })
                .collect(),
        )
    } else {
        None
    };
    let page = |status: Option<RunStatus>| {
        newest(
            shared,
            &account,
            &RunFilter {
                status,
                ..RunFilter::default()
            },
        )
    };
    let mut failing = Vec::new();
    for status in [
        RunStatus::NeedsAttention,
        RunStatus::NeedsRepair,
        RunStatus::Failed,
    ] {
        failing.extend(page(Some(status))?);
    }
    failing.sort_by_key(|run| std::cmp::Reverse(run.updated_at.0));
    failing.truncate(LINES);
    let line = |run: RunRecord| {
        let text = format!(
            "{} #{}, started by {}",
            run.workflow_name,
            run.number,
            who(&run.started_by)
        );
        let at = run.updated_at;
        run_line(&run, text, at, now)
    };
    Ok(NeedsMe {
        waiting,
        failing: failing.into_iter().map(line).collect(),
        recent: page(None)?.into_iter().map(line).collect(),
    })
}

/// The newest runs of the workflow `name`, each a line that leads to its run.
pub(crate) fn recent_runs_of(
    shared: &Shared,
    account: &storage::AccountId,
    name: &str,
) -> Result<Vec<HomeLine>, Error> {
    let filter = RunFilter {
        workflow: Some(name.to_owned()),
        ..RunFilter::default()
    };
    let now = shared.now().0;
    Ok(newest(shared, account, &filter)?
        .into_iter()
        .map(|run| {
            let text = format!("#{}, started by {}", run.number, who(&run.started_by));
            let at = run.created_at;
            run_line(&run, text, at, now)
        })
        .collect())
}

/// The account's newest runs that `filter` lets through, at most [`LINES`].
fn newest(
    shared: &Shared,
    account: &storage::AccountId,
    filter: &RunFilter,
) -> Result<Vec<RunRecord>, Error> {
    Ok(shared
        .store
        .runs_page(account, filter, None, LINES)
        .map_err(Error::storage("list the recent runs"))?
        .runs)
}

/// A run as a line: its status, `text` leading to it, and the time `at`.
fn run_line(run: &RunRecord, text: String, at: storage::Timestamp, now: i64) -> HomeLine {
    HomeLine {
        href: format!("/runs/{}", run.id),
        status: Some(Status::of_run(run.status.as_str())),
        text,
        when: crate::html::moment(at.0, now),
    }
}
