//! The interview with the assistant (issue 17 §4) over the JSON API, and what the console's
//! chat page shares with it: start an interview, send the person's message, confirm the
//! proposal shown.
//!
//! - The assistant is the account's default provider and its assistant model; with none, the
//!   answer says so and a person writes the workflow (no interview).
//! - Every proposal is checked before it is shown (`engine::Engine::check_draft`: the parser,
//!   G1, with its agents; the paths; the account's values), then shown with its reach rows
//!   (G27, under the caption word for word) and the authoring lints. Nothing is executed.
//! - Only the person who started an interview sees it; only a person whose role may save
//!   workflows (member or above, the route's policy and checked again here) confirms, and
//!   the proposal becomes one version, authored by the assistant and accepted by that person,
//!   audited; one that conflicts with a version saved meanwhile is refused, losing nothing,
//!   and so is one whose reach rows were made from a workspace file (an agent it uses without
//!   proposing it, a script of one) that changed since the person was shown them: they look
//!   again.
//! - Everything kept or answered was scrubbed with the account's values first.

use agent::interview::{Conversation, Proposed, Reply};
use api_types::interview::{
    ConfirmInterviewRequest, InterviewConfirmed, InterviewMessageRequest, InterviewProposal,
    InterviewView, ProposedFile, StartInterviewRequest,
};
use auth::Role;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde_json::json;
use storage::{AccountId, Actor};
use workspace::{Author, RelPath};

use crate::authn::Authenticated;
use crate::handlers::workflow_versions::version_view;
use crate::handlers::{account_redactor, audit, blocking, random_id};
use crate::interviews::{Interview, Shown};
use crate::state::Shared;
use crate::{AppState, Error};

/// The person behind the request: their id and name (an interview is a person's).
fn person_of(authenticated: &Authenticated) -> Result<(String, String), Error> {
    match &authenticated.actor {
        Actor::Person { id, name } => Ok((id.clone(), name.clone())),
        other => Err(Error::Forbidden {
            principal: format!("{} {}", other.kind(), other.id()),
            method: "POST".to_owned(),
            route: "an interview".to_owned(),
        }),
    }
}

fn not_found(id: &str) -> Error {
    Error::NotFound {
        what: "interview",
        id: id.to_owned(),
    }
}

/// The account's assistant: its default provider and that provider's assistant model, or why
/// there is none (then a person writes the workflow).
fn assistant_of(shared: &Shared, account: &AccountId) -> Result<(String, String), Error> {
    let providers = shared
        .store
        .model_providers(account)
        .map_err(Error::storage("read the account's model providers"))?;
    let Some(default) = providers.iter().find(|provider| provider.is_default) else {
        return Err(Error::NoAssistant {
            why: "the account has no model provider, so there is no assistant to interview you; \
                  write the workflow yourself (the Files page, PUT /api/workflows/NAME or \
                  `stepward workflows save`), or ask an admin to add a provider with an \
                  assistant model on the Models page"
                .to_owned(),
        });
    };
    match default.assistant_model.as_deref().map(str::trim) {
        Some(model) if !model.is_empty() => Ok((default.name.clone(), model.to_owned())),
        _ => Err(Error::NoAssistant {
            why: format!(
                "the account's default model provider `{}` names no assistant model, so there is \
                 no assistant to interview you; write the workflow yourself, or ask an admin to \
                 set its assistant model on the Models page",
                default.name
            ),
        }),
    }
}

/// Whether the account has an assistant (`Err(Error::NoAssistant)` says why not).
pub(crate) fn assistant_status(shared: &Shared, account: &AccountId) -> Result<(), Error> {
    assistant_of(shared, account).map(drop)
}

/// `POST /api/interviews`.
pub(crate) async fn start(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Json(request): Json<StartInterviewRequest>,
) -> Result<(StatusCode, Json<InterviewView>), Error> {
    let id = begin(&state, &authenticated, &request.workflow, &request.message).await?;
    Ok((
        StatusCode::CREATED,
        Json(view_of(&state.shared, &authenticated, &id)?),
    ))
}

/// `GET /api/interviews/{id}`.
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(id): Path<String>,
) -> Result<Json<InterviewView>, Error> {
    Ok(Json(view_of(&state.shared, &authenticated, &id)?))
}

/// `POST /api/interviews/{id}/messages`.
pub(crate) async fn message(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(id): Path<String>,
    Json(request): Json<InterviewMessageRequest>,
) -> Result<Json<InterviewView>, Error> {
    converse(&state, &authenticated, &id, &request.message).await?;
    Ok(Json(view_of(&state.shared, &authenticated, &id)?))
}

/// `POST /api/interviews/{id}/confirm`.
pub(crate) async fn confirm(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(id): Path<String>,
    Json(request): Json<ConfirmInterviewRequest>,
) -> Result<Json<InterviewConfirmed>, Error> {
    // The document's range, held here.
    if !(1..=api_types::limits::PROPOSAL_NUMBER_MAX).contains(&request.proposal) {
        return Err(Error::InvalidInput {
            field: "proposal",
            reason: format!(
                "a proposal's number is 1 to {}, {} given",
                api_types::limits::PROPOSAL_NUMBER_MAX,
                request.proposal
            ),
        });
    }
    let version = accept(&state, &authenticated, &id, request.proposal, &request.note).await?;
    Ok(Json(InterviewConfirmed {
        interview: id,
        version: version_view(&version),
    }))
}

/// The interview `id` of this person, as they see it.
pub(crate) fn view_of(
    shared: &Shared,
    authenticated: &Authenticated,
    id: &str,
) -> Result<InterviewView, Error> {
    let (person, _) = person_of(authenticated)?;
    shared
        .interviews
        .with(
            shared,
            id,
            authenticated.principal.account_id(),
            &person,
            shared.now().0,
            |interview| interview.view(),
        )?
        .ok_or_else(|| not_found(id))
}

fn check_message(message: &str) -> Result<(), Error> {
    if message.trim().is_empty() {
        return Err(Error::InvalidInput {
            field: "message",
            reason: "say what the workflow should do".to_owned(),
        });
    }
    Ok(())
}

/// Starts an interview about `workflow` (empty: a new one) with the person's first message;
/// answers its id once the assistant answered.
pub(crate) async fn begin(
    state: &AppState,
    authenticated: &Authenticated,
    workflow: &str,
    message: &str,
) -> Result<String, Error> {
    let shared = &state.shared;
    let (person, _) = person_of(authenticated)?;
    check_message(message)?;
    let account = authenticated.account();
    let about = Some(workflow.trim())
        .filter(|name| !name.is_empty())
        .map(str::to_owned);
    let path = match &about {
        Some(name) => Some(
            engine::workflow_path(name).ok_or_else(|| Error::InvalidInput {
                field: "workflow",
                reason: "a workflow's name is letters, digits, `-` and `_`, at most 64".to_owned(),
            })?,
        ),
        None => None,
    };
    let (provider, model) = assistant_of(shared, &account)?;
    let engine = shared.engine.clone();
    let (current, base) = {
        let account = account.clone();
        let about = about.clone();
        blocking("read the workflow of an interview", move || {
            let Some(path) = path else {
                return Ok((None, Vec::new()));
            };
            let base = engine
                .current_hashes(&account, std::slice::from_ref(&path))
                .map_err(Error::definitions)?;
            let current = engine
                .workflow_version_text(&account, about.as_deref().unwrap_or(""), None)
                .map_err(Error::definitions)?
                .map(|(_, text)| text);
            Ok::<_, Error>((current, base))
        })
        .await??
    };
    // The current text goes to the model provider: scrubbed first, with the account's values
    // as they are now (one may have entered the vault after the workflow was saved).
    let redactor = account_redactor(shared, &account)?;
    let current = current.map(|text| redactor.scrub(&text).into_inner());
    let context = agent::interview::context(about.as_deref(), current.as_deref());
    let id = random_id("iv")?;
    // Audited first: an entry that cannot be written starts no interview.
    audit(
        shared,
        &account,
        authenticated.actor.clone(),
        storage::AuditAction::InterviewStarted,
        &json!({"interview": id, "workflow": about, "provider": provider, "model": model}),
    )?;
    shared.interviews.insert(
        shared,
        Interview {
            id: id.clone(),
            account: account.clone(),
            person,
            about: about.clone(),
            base,
            provider: provider.clone(),
            model: model.clone(),
            conversation: Conversation::new(&context),
            entries: Vec::new(),
            proposal: None,
            proposals: 0,
            saved_version: None,
            busy_since: None,
            last_used: shared.now().0,
            full: false,
        },
        shared.now().0,
    )?;
    converse(state, authenticated, &id, message).await?;
    Ok(id)
}

/// Each path a proposal writes and its hash as the interview read it (`None`: no file).
type Base = Vec<(RelPath, Option<String>)>;

/// What the interview holds for one turn of the assistant.
struct Turn {
    about: Option<String>,
    provider: String,
    model: String,
    conversation: Conversation,
}

/// Sends the person's message to the assistant and keeps its answer: a question, a proposal
/// that passed the checks (with its reach and lints), or the diagnostics of one that did not.
pub(crate) async fn converse(
    state: &AppState,
    authenticated: &Authenticated,
    id: &str,
    message: &str,
) -> Result<(), Error> {
    let shared = &state.shared;
    let (person, _) = person_of(authenticated)?;
    check_message(message)?;
    let account = authenticated.account();
    let redactor = account_redactor(shared, &account)?;
    let shown_message = redactor.scrub(message).into_inner();
    let now = shared.now().0;
    let turn = shared
        .interviews
        .with(shared, id, &account, &person, now, |interview| {
            if interview.saved_version.is_some() {
                return Err(Error::InterviewRefused {
                    reason: "this interview was confirmed; start a new one to change the workflow"
                        .to_owned(),
                });
            }
            if interview.is_busy(now) {
                return Err(Error::InterviewRefused {
                    reason: "the assistant is still answering your last message".to_owned(),
                });
            }
            interview.busy_since = Some(now);
            interview.push("person", shown_message.clone(), Vec::new());
            Ok(Turn {
                about: interview.about.clone(),
                provider: interview.provider.clone(),
                model: interview.model.clone(),
                conversation: interview.conversation.clone(),
            })
        })?
        .ok_or_else(|| not_found(id))??;
    // A client that goes away while the assistant answers drops this future: the guard then
    // frees the interview, which would otherwise stay busy until it expired.
    let mut busy = BusyGuard {
        shared: std::sync::Arc::clone(shared),
        id,
        account: &account,
        person: &person,
        armed: true,
    };
    let answered = answer_turn(state, &account, &redactor, message, turn).await;
    busy.armed = false;
    let now = shared.now().0;
    shared
        .interviews
        .with(shared, id, &account, &person, now, |interview| {
            interview.busy_since = None;
            match answered {
                Ok((conversation, reply)) => {
                    interview.conversation = conversation;
                    keep_reply(interview, reply, &redactor);
                }
                Err(why) => interview.push(
                    "platform",
                    format!(
                        "The assistant could not answer ({why}). Nothing was changed; send your \
                         message again, or write the workflow yourself."
                    ),
                    Vec::new(),
                ),
            }
        })?
        .ok_or_else(|| not_found(id))
}

/// A reply of the assistant as the interview keeps it.
enum Kept {
    Reply(Reply<Box<Shown>>),
    /// The paths a shown proposal writes that the interview had not read before, as they are.
    WithBase(Reply<Box<Shown>>, Base),
}

fn keep_reply(interview: &mut Interview, kept: Kept, redactor: &redact::Redactor) {
    let (reply, base) = match kept {
        Kept::Reply(reply) => (reply, Vec::new()),
        Kept::WithBase(reply, base) => (reply, base),
    };
    for (path, hash) in base {
        if !interview.base.iter().any(|(seen, _)| seen == &path) {
            interview.base.push((path, hash));
        }
    }
    let refused_entries = |interview: &mut Interview, refused: &[Vec<String>]| {
        for problems in refused {
            interview.push(
                "platform",
                "A proposal of the assistant did not pass the checks, so it was not shown; the \
                 assistant saw these problems and tried again."
                    .to_owned(),
                problems.clone(),
            );
        }
    };
    match reply {
        Reply::Question { text } => interview.push("assistant", text, Vec::new()),
        Reply::Proposal {
            proposed,
            checked,
            refused,
        } => {
            refused_entries(interview, &refused);
            let mut shown = *checked;
            interview.proposals += 1;
            shown.view.number = interview.proposals;
            interview.about = Some(shown.view.workflow.clone());
            let note = if proposed.note.is_empty() {
                "Here is a proposal.".to_owned()
            } else {
                proposed.note
            };
            interview.push(
                "assistant",
                format!("{note} (proposal {})", shown.view.number),
                Vec::new(),
            );
            interview.proposal = Some(shown);
        }
        Reply::Unfixed { proposed, refused } => {
            let (last, earlier) = refused
                .split_last()
                .map_or((Vec::new(), &[][..]), |(last, earlier)| {
                    (last.clone(), earlier)
                });
            refused_entries(interview, earlier);
            interview.push(
                "platform",
                format!(
                    "The assistant's proposal did not pass the checks in {} tries, so it is not \
                     shown as a proposal and cannot be confirmed. Its problems are listed; tell \
                     the assistant what to change, or write the workflow yourself. What it \
                     proposed:\n\n{}",
                    agent::interview::MAX_PROPOSALS,
                    // Refused perhaps because it held a value of the account: scrubbed and
                    // bounded before it is kept, like every other text held here.
                    shown_refused_text(redactor, &proposed.workflow)
                ),
                last,
            );
        }
    }
}

/// Frees an interview marked busy when the answer to its message never comes back (the
/// request's future was dropped); disarmed once the answer came, which frees it itself.
struct BusyGuard<'a> {
    shared: std::sync::Arc<Shared>,
    id: &'a str,
    account: &'a AccountId,
    person: &'a str,
    armed: bool,
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let now = self.shared.now().0;
        // Best effort, in a drop: a mark left behind lapses after the assistant's deadline.
        let _ = self.shared.interviews.with(
            &self.shared,
            self.id,
            self.account,
            self.person,
            now,
            |interview| {
                interview.busy_since = None;
            },
        );
    }
}

/// A refused proposal's text as the interview keeps it: scrubbed, and cut to 64 KiB.
fn shown_refused_text(redactor: &redact::Redactor, text: &str) -> String {
    const MAX_KEPT_BYTES: usize = 64 * 1024;
    let mut end = text.len().min(MAX_KEPT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut kept = redactor.scrub(text.get(..end).unwrap_or(text)).into_inner();
    if end < text.len() {
        kept.push_str("\n(cut: the rest of the proposal is not kept)");
    }
    kept
}

/// One answer of the assistant, each proposal checked (and, when it passed, its reach and
/// lints made) before it is returned.
async fn answer_turn(
    state: &AppState,
    account: &AccountId,
    redactor: &redact::Redactor,
    message: &str,
    mut turn: Turn,
) -> Result<(Conversation, Kept), String> {
    let shared = &state.shared;
    let (_, provider) = crate::handlers::models::callable(state, account, &turn.provider)
        .await
        .map_err(|error| {
            format!(
                "its provider `{}` cannot be used: {}",
                turn.provider,
                error.status_and_public_message().1
            )
        })?;
    let names = crate::handlers::models::account_names(shared, account).map_err(|error| {
        format!(
            "the account's providers cannot be read: {}",
            error.status_and_public_message().1
        )
    })?;
    let engine = shared.engine.clone();
    let about = turn.about.clone();
    let account_name = account.clone();
    let mut check = move |proposed: &Proposed| -> Result<engine::CheckedDraft, Vec<String>> {
        let draft = engine::Draft {
            workflow: proposed.workflow.clone(),
            files: proposed.files.clone(),
        };
        let checked = engine.check_draft(&account_name, &names, about.as_deref(), &draft)?;
        if about.is_none()
            && let Some(path) = engine::workflow_path(&checked.name)
            && let Ok(found) = engine.current_hashes(&account_name, &[path])
            && found.iter().any(|(_, hash)| hash.is_some())
        {
            return Err(vec![format!(
                "workflows/{}.yaml: a workflow named `{}` exists already, and this interview \
                 makes a new one; choose another name (to change `{}`, the person starts an \
                 interview about it)",
                checked.name, checked.name, checked.name
            )]);
        }
        Ok(checked)
    };
    let reply = agent::interview::answer(
        &provider,
        &turn.model,
        redactor,
        &mut turn.conversation,
        message,
        &mut check,
    )
    .await
    .map_err(|error| error.to_string())?;
    let conversation = turn.conversation;
    let kept = match reply {
        Reply::Question { text } => Kept::Reply(Reply::Question { text }),
        Reply::Unfixed { proposed, refused } => Kept::Reply(Reply::Unfixed { proposed, refused }),
        Reply::Proposal {
            proposed,
            checked,
            refused,
        } => {
            let shared = state.shared.clone();
            let account = account.clone();
            let draft = engine::Draft {
                workflow: proposed.workflow.clone(),
                files: proposed.files.clone(),
            };
            let note = proposed.note.clone();
            let (shown, base) = blocking("show an interview's proposal", move || {
                shown_proposal(&shared, &account, draft, note, &checked)
            })
            .await
            .map_err(|error| error.to_string())?
            .map_err(|error| error.status_and_public_message().1.to_owned())?;
            Kept::WithBase(
                Reply::Proposal {
                    proposed,
                    checked: Box::new(shown),
                    refused,
                },
                base,
            )
        }
    };
    Ok((conversation, kept))
}

/// The proposal as the person sees it: its files, its reach rows with the models' hosts, its
/// lints; and the current hash of every path it writes.
fn shown_proposal(
    shared: &Shared,
    account: &AccountId,
    draft: engine::Draft,
    note: String,
    checked: &engine::CheckedDraft,
) -> Result<(Shown, Base), Error> {
    let mut rows = checked.reach.clone();
    crate::handlers::workflows::with_account_model_hosts(shared, account, &mut rows)?;
    let reach = crate::handlers::workflows::report_of(shared, &checked.workflow, rows);
    let lints = shared
        .authoring_lints
        .get()
        .and_then(|lints| lints.lint(&checked.workflow));
    let base = shared
        .engine
        .current_hashes(account, &checked.paths())
        .map_err(Error::definitions)?;
    let view = InterviewProposal {
        number: 0,
        workflow: checked.name.clone(),
        note,
        files: checked
            .files
            .iter()
            .map(|(path, text)| ProposedFile {
                path: path.to_string(),
                text: text.clone(),
            })
            .collect(),
        reach,
        lints_checked: lints.is_some(),
        lints: lints
            .unwrap_or_default()
            .into_iter()
            .map(|diagnostic| api_types::Diagnostic {
                file: diagnostic.file,
                line: diagnostic.line,
                column: diagnostic.column,
                code: diagnostic.code.to_owned(),
                message: diagnostic.message,
                help: diagnostic.help,
            })
            .collect(),
    };
    Ok((
        Shown {
            draft,
            view,
            read: checked.read.clone(),
        },
        base,
    ))
}

/// Saves the shown proposal `number` as one version, authored by the assistant and accepted by
/// this person (see the module documentation).
pub(crate) async fn accept(
    state: &AppState,
    authenticated: &Authenticated,
    id: &str,
    number: u32,
    note: &str,
) -> Result<engine::WorkflowVersion, Error> {
    let shared = state.shared.clone();
    let (person, person_name) = person_of(authenticated)?;
    if authenticated.principal.role() < Role::Member {
        return Err(Error::Forbidden {
            principal: format!("person {person}"),
            method: "POST".to_owned(),
            route: "confirm an interview".to_owned(),
        });
    }
    let account = authenticated.account();
    let now = shared.now().0;
    let (shown, base, provider, model) = shared
        .interviews
        .with(&shared, id, &account, &person, now, |interview| {
            if interview.saved_version.is_some() {
                return Err(Error::InterviewRefused {
                    reason: "this interview's proposal was saved already".to_owned(),
                });
            }
            if interview.is_busy(now) {
                return Err(Error::InterviewRefused {
                    reason: "the assistant is still answering; confirm once it has".to_owned(),
                });
            }
            match &interview.proposal {
                Some(shown) if shown.view.number == number => Ok((
                    shown.clone(),
                    interview.base.clone(),
                    interview.provider.clone(),
                    interview.model.clone(),
                )),
                Some(shown) => Err(Error::InterviewRefused {
                    reason: format!(
                        "proposal {number} is not the one shown (that is proposal {}); confirm \
                         what you see",
                        shown.view.number
                    ),
                }),
                None => Err(Error::InterviewRefused {
                    reason: "the assistant has made no proposal that passed the checks yet"
                        .to_owned(),
                }),
            }
        })?
        .ok_or_else(|| not_found(id))??;
    let name = shown.view.workflow.clone();
    let names = crate::handlers::models::account_names(&shared, &account)?;
    let note = note.trim().to_owned();
    let message = format!(
        "workflow {name}: proposed by the assistant ({provider}, model {model}) in an \
         interview, accepted by {person_name}{}",
        if note.is_empty() {
            String::new()
        } else {
            format!(": {note}")
        }
    );
    // Announced first: an intent that cannot be written saves nothing (audit or nothing). Its
    // paths are the proposal's: its workflow and its files.
    let announced = {
        let mut paths = vec![format!("workflows/{name}.yaml")];
        paths.extend(shown.view.files.iter().map(|file| file.path.clone()));
        crate::workspace_recovery::announce(
            &shared,
            &account,
            authenticated.actor.clone(),
            &Author::Assistant {
                accepted_by: person.clone(),
            },
            &paths,
        )?
    };
    let intent = announced.intent.clone();
    let saved = {
        let shared = shared.clone();
        let account = account.clone();
        let draft = shown.draft.clone();
        let shown = shown.clone();
        let person = person.clone();
        blocking("save an interview's proposal", move || {
            shared.engine.save_draft(
                &account,
                &names,
                &draft,
                engine::AsRead {
                    written: &base,
                    shown: &shown.read,
                },
                &Author::Assistant {
                    accepted_by: person,
                },
                &message,
            )
        })
        .await?
    };
    let files: Vec<&str> = shown
        .view
        .files
        .iter()
        .map(|file| file.path.as_str())
        .collect();
    match saved {
        Ok(version) => {
            audit(
                &shared,
                &account,
                authenticated.actor.clone(),
                storage::AuditAction::InterviewConfirmed,
                &json!({"intent": intent, "interview": id, "workflow": name, "version": version.number,
                        "revision": version.revision, "files": files,
                        "author": format!("the assistant ({provider}, model {model})"),
                        "accepted_by": person}),
            )?;
            shared.interviews.with(
                &shared,
                id,
                &account,
                &person,
                shared.now().0,
                |interview| {
                    interview.saved_version = Some(version.number);
                    interview.push(
                        "platform",
                        format!(
                            "Saved as version {} of {name}, authored by the assistant and \
                             accepted by {person_name}.",
                            version.number
                        ),
                        Vec::new(),
                    );
                },
            )?;
            Ok(version)
        }
        Err(engine::DraftSaveError::Write(source)) => {
            let error = Error::definitions(source);
            audit(
                &shared,
                &account,
                authenticated.actor.clone(),
                storage::AuditAction::InterviewConfirmRefused,
                &json!({"intent": intent, "interview": id, "workflow": name,
                        "reason": error.status_and_public_message().1}),
            )?;
            Err(error)
        }
        Err(refusal) => {
            let reason = refusal.to_string();
            audit(
                &shared,
                &account,
                authenticated.actor.clone(),
                storage::AuditAction::InterviewConfirmRefused,
                &json!({"intent": intent, "interview": id, "workflow": name, "reason": reason}),
            )?;
            shared.interviews.with(
                &shared,
                id,
                &account,
                &person,
                shared.now().0,
                |interview| {
                    interview.push(
                        "platform",
                        format!("Not saved: {reason}. The proposal is still here."),
                        Vec::new(),
                    );
                },
            )?;
            Err(Error::InterviewRefused { reason })
        }
    }
}
