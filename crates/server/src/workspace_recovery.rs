//! The workspace's audit entries around a commit, as the server's handlers use them: the
//! intent a write announces first and the recovery of intents a stopped process left open are
//! the engine's (`engine::workspace_writes`, one place for every door since issue 37); this
//! module maps their errors to the server's.

use storage::{AccountId, Actor};
use workspace::Author;

use crate::state::Shared;
use crate::{AppState, Error};

/// What a failed announcement or recovery means for a request.
fn server_error(operation: &'static str, error: engine::Error) -> Error {
    match error {
        engine::Error::Storage(source) => Error::Storage { operation, source },
        engine::Error::Workspace(source) => Error::Workspace { operation, source },
        other => Error::WorkspaceWrites {
            operation,
            source: Box::new(other),
        },
    }
}

/// Appends the intent of a write of `paths` by `author` on the account's workspace as it is
/// now (its head revision the base), and answers it with the workspace's writes lock held
/// (keep it until the outcome entry is written); an error means the write must not happen.
pub(crate) fn announce(
    shared: &Shared,
    account: &AccountId,
    actor: Actor,
    author: &Author,
    paths: &[String],
) -> Result<engine::workspace_writes::AnnouncedWrite, Error> {
    shared
        .engine
        .announce_workspace_write(account, actor, author, paths)
        .map_err(|error| server_error("announce a workspace write", error))
}

/// Records the outcome of every workspace write whose intent has none, from what the
/// account's revision log shows (see `engine::workspace_writes`).
pub fn recover_workspace_writes(
    state: &AppState,
) -> Result<engine::workspace_writes::WritesRecovered, Error> {
    state
        .shared
        .engine
        .recover_workspace_writes()
        .map_err(|error| server_error("recover interrupted workspace writes", error))
}
