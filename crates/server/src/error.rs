//! The one place errors become HTTP (STYLE 5).
//!
//! [`Error::into_response`] picks the status and a safe message and attaches an
//! [`ErrorReport`] with the details; the outermost middleware (`layers::finish`) logs the
//! details with the request id and writes the body: JSON ([`api_types::ErrorBody`]) under
//! `/api/`, a small page elsewhere. No detail (ids, paths, sources) ever reaches the client.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// What a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No credentials, or credentials that do not check out, on a route that needs them.
    #[error("no valid credentials for {method} {route}")]
    Unauthenticated { method: String, route: String },
    /// Credentials of the right account, but too low a role or the wrong kind of principal.
    #[error("{principal} may not {method} {route}")]
    Forbidden {
        principal: String,
        method: String,
        route: String,
    },
    /// A form or state-changing request of a session without the session's CSRF token.
    #[error("CSRF token missing or wrong for {method} {route}")]
    CsrfRejected { method: String, route: String },
    /// A role rule of the `auth` crate refused the operation (granting above one's role,
    /// touching the owner, a key acting where only a person may).
    #[error("a role rule refused {operation}")]
    RoleRule {
        operation: &'static str,
        #[source]
        source: auth::Denied,
    },
    /// The thing to create exists already (an email in the account, an id).
    #[error("conflict during {operation}")]
    Conflict {
        operation: &'static str,
        #[source]
        source: storage::Error,
    },
    /// A person's API keys are not the ones a removal or demotion was asked for: one was
    /// created, revoked or re-assigned since they were listed, or a key to keep is not theirs.
    #[error(
        "the API keys of person {person} changed during {operation}, or a key to keep is not theirs"
    )]
    KeysChanged {
        operation: &'static str,
        person: String,
    },
    /// Ownership goes only to a person who has signed in at least once.
    #[error("person {person} has never signed in, so ownership cannot go to them ({operation})")]
    NewOwnerNeverSignedIn {
        operation: &'static str,
        person: String,
    },
    /// A one-time link is re-issued only for a person who has never signed in.
    #[error(
        "person {person} has signed in already, so no one-time link is re-issued ({operation})"
    )]
    AlreadySignedIn {
        operation: &'static str,
        person: String,
    },
    /// A resource that does not exist, or exists in another account (answered alike).
    #[error("{what} `{id}` not found (or it belongs to another account)")]
    NotFound { what: &'static str, id: String },
    /// A matched route that has no entry in the policy table: refused, never served.
    #[error("the route {method} {route} has no policy in auth::policy_table")]
    MissingPolicy { method: String, route: String },
    /// A matched path asked with a method it does not serve (`TRACE`, `OPTIONS`, `PUT` on a
    /// list...); `allowed` lists the methods it serves, for the `Allow` header.
    #[error("{method} is not served at {route} (it serves {allowed})")]
    MethodNotAllowed {
        method: String,
        route: String,
        allowed: String,
    },
    /// A request body or field that is not acceptable; `reason` is ours, safe to show.
    #[error("invalid {field}: {reason}")]
    InvalidInput { field: &'static str, reason: String },
    /// A text of the request longer than its limit (`api_types::limits`, the document's
    /// `maxLength`); `field` is its place in the body, in our words.
    #[error("{field}: at most {max_chars} characters, {given_chars} given")]
    TooLong {
        field: String,
        max_chars: u64,
        given_chars: u64,
    },
    /// A password sign-in that did not succeed (unknown account or person, wrong password).
    /// The email is not kept: the log must not hold what someone typed into a form.
    #[error("sign-in to account `{account}` failed: {reason}")]
    SignInFailed {
        account: String,
        reason: &'static str,
    },
    /// Too many sign-in attempts.
    #[error("sign-in to account `{account}` rate limited for {retry_after_millis} ms")]
    RateLimited {
        account: String,
        retry_after_millis: u64,
    },
    /// Too many requests from one client that is not signed in, on a route that needs no
    /// sign-in (the welcome form, share and approve links, the public documents).
    #[error("{route} from {address} rate limited for {retry_after_millis} ms")]
    ClientRateLimited {
        route: String,
        address: String,
        retry_after_millis: u64,
    },
    /// Every password check's turn is taken and the queue is full: answered at once instead
    /// of waiting without end.
    #[error("cannot {operation} now: every password check is busy")]
    PasswordWorkBusy {
        operation: &'static str,
        retry_after_millis: u64,
    },
    /// A password check ended without an answer (it panicked on its thread).
    #[error("cannot {operation}: the password check ended without an answer")]
    PasswordWorkFailed { operation: &'static str },
    /// The run is not in a state that allows the operation (not waiting at that gate, or the
    /// gate was already decided).
    #[error("the operation conflicts with the state of run {run}")]
    RunConflict {
        run: String,
        #[source]
        source: Box<engine::Error>,
    },
    /// A repair the engine refused to propose or accept (G9), in its own words: the run or
    /// step does not need repair, no assistant, no proposal passed the checks, the workspace's
    /// workflow changed since the run started.
    #[error("the repair of step {step} of run {run} is refused: {reason}")]
    RepairRefused {
        run: String,
        step: String,
        reason: String,
    },
    /// The engine failed.
    #[error("engine failed on run {run}")]
    Engine {
        run: String,
        #[source]
        source: Box<engine::Error>,
    },
    /// The engine failed at something that is no run's (a tool test, issue 40).
    #[error("the engine failed to {operation}")]
    EngineOperation {
        operation: &'static str,
        #[source]
        source: Box<engine::Error>,
    },
    /// The store failed.
    #[error("storage failed during {operation}")]
    Storage {
        operation: &'static str,
        #[source]
        source: storage::Error,
    },
    /// A change of people the store refused in a way the handler did not expect.
    #[error("storage refused {operation}: {answer}")]
    PeopleRefused {
        operation: &'static str,
        answer: String,
    },
    /// The server was started without a workflow source.
    #[error("no workflow source is configured for {operation}")]
    WorkflowsUnavailable { operation: &'static str },
    /// Reading a workflow failed.
    #[error(transparent)]
    WorkflowSource(#[from] crate::WorkflowSourceError),
    /// The workflow does not pass the parser, so it has no reach and cannot run.
    #[error("workflow {name} does not validate: {problems} problem(s)")]
    WorkflowInvalid { name: String, problems: usize },
    /// The engine refused to start a run (inputs that do not match, a credential key).
    #[error("starting a run of {workflow} was refused")]
    RunRefused {
        workflow: String,
        #[source]
        source: Box<engine::Error>,
    },
    /// The server was started without a model client, so models cannot be called.
    #[error("no model client is configured for {operation}")]
    ModelsUnavailable { operation: &'static str },
    /// The server was started without a vault, so vault routes cannot be served.
    #[error("no vault is configured for {operation}")]
    VaultUnavailable { operation: &'static str },
    /// The vault refused or failed an operation.
    #[error("the vault failed during {operation}")]
    Vault {
        operation: &'static str,
        #[source]
        source: vault::Error,
    },
    /// The account's workspace refused or failed a read or a write.
    #[error("the workspace failed to {operation}")]
    Workspace {
        operation: &'static str,
        #[source]
        source: workspace::Error,
    },
    /// A workflow or agent file that was refused before anything was written (G1): it does
    /// not parse, holds a value of the account, or is not where definitions go.
    #[error("a definition was refused")]
    DefinitionRefused {
        #[source]
        source: engine::DefinitionWriteError,
    },
    /// An auth primitive failed (randomness, password hashing).
    #[error("auth failed during {operation}")]
    Auth {
        operation: &'static str,
        #[source]
        source: auth::Error,
    },
    /// The account's redactor could not be built, so nothing is written unscrubbed.
    #[error("cannot build the redactor of account {account}")]
    Redact {
        account: String,
        #[source]
        source: redact::Error,
    },
    /// An interview's step that cannot be taken now (a proposal saved meanwhile, one that is
    /// not the one shown, the assistant still answering); `reason` is ours, safe to show.
    #[error("the interview refused: {reason}")]
    InterviewRefused { reason: String },
    /// The account has no assistant (no default provider, or no assistant model); `why` is
    /// ours, safe to show.
    #[error("no assistant: {why}")]
    NoAssistant { why: String },
    /// A workspace write's intent could not be announced, or an interrupted one recorded.
    #[error("cannot {operation}")]
    WorkspaceWrites {
        operation: &'static str,
        #[source]
        source: Box<engine::Error>,
    },
    /// A blocking task (password hashing, the engine) panicked or was cancelled.
    #[error("a blocking task during {operation} did not finish")]
    Blocking {
        operation: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
}

impl Error {
    /// [`Error::Engine`] for the run `run`, to map an engine error with.
    pub(crate) fn engine_of(run: impl std::fmt::Display) -> impl FnOnce(engine::Error) -> Error {
        move |source| Error::Engine {
            run: run.to_string(),
            source: Box::new(source),
        }
    }

    /// [`Error::EngineOperation`].
    pub(crate) fn engine_operation(operation: &'static str, source: engine::Error) -> Error {
        Error::EngineOperation {
            operation,
            source: Box::new(source),
        }
    }

    /// A refused or failed write of definitions, as an answer.
    pub(crate) fn definitions(source: engine::DefinitionWriteError) -> Error {
        match source {
            engine::DefinitionWriteError::Workspace(workspace::Error::NoSuchFile { path }) => {
                Error::NotFound {
                    what: "file",
                    id: path,
                }
            }
            engine::DefinitionWriteError::Workspace(source) => Error::Workspace {
                operation: "write to the workspace",
                source,
            },
            engine::DefinitionWriteError::Values(source) => Error::Redact {
                account: "of the write".to_owned(),
                source,
            },
            other => Error::DefinitionRefused { source: other },
        }
    }

    /// A storage failure during `operation`.
    pub(crate) fn storage(operation: &'static str) -> impl FnOnce(storage::Error) -> Error {
        move |source| Error::Storage { operation, source }
    }

    /// A storage failure during `operation`, where "it exists already" is the caller's
    /// conflict rather than our failure.
    pub(crate) fn storage_or_conflict(
        operation: &'static str,
    ) -> impl FnOnce(storage::Error) -> Error {
        move |source| match source {
            storage::Error::AlreadyExists { .. } => Error::Conflict { operation, source },
            other => Error::Storage {
                operation,
                source: other,
            },
        }
    }

    /// A role rule's refusal during `operation`.
    pub(crate) fn denied(operation: &'static str) -> impl FnOnce(auth::Denied) -> Error {
        move |source| Error::RoleRule { operation, source }
    }

    /// An auth failure during `operation`.
    pub(crate) fn auth(operation: &'static str) -> impl FnOnce(auth::Error) -> Error {
        move |source| Error::Auth { operation, source }
    }

    /// The status and the message a client may see.
    pub fn status_and_public_message(&self) -> (StatusCode, &'static str) {
        match self {
            Error::Unauthenticated { .. } => (StatusCode::UNAUTHORIZED, "Sign in first."),
            Error::Forbidden { .. } => (
                StatusCode::FORBIDDEN,
                "Your role does not allow this. Ask an admin of your account.",
            ),
            Error::RoleRule { .. } => (
                StatusCode::FORBIDDEN,
                "Your role does not allow this change. Ask the owner of your account.",
            ),
            Error::Conflict { .. } => (
                StatusCode::CONFLICT,
                "This exists already (the email may be taken in this account).",
            ),
            Error::NewOwnerNeverSignedIn { .. } => (
                StatusCode::CONFLICT,
                "Nothing was changed: ownership goes only to a person who has signed in at \
                 least once, so that the account always has an owner who can sign in. Ask them \
                 to set their password with their one-time link first (an admin can send a new \
                 link from the People page if it expired).",
            ),
            Error::AlreadySignedIn { .. } => (
                StatusCode::CONFLICT,
                "This person has signed in already, so they get no new one-time link: they sign \
                 in with their password.",
            ),
            Error::KeysChanged { .. } => (
                StatusCode::CONFLICT,
                "Nothing was changed: the person's API keys are not the ones listed (a key to \
                 keep must be one they created and that is not revoked, and a key may have been \
                 created or revoked meanwhile). Look at their keys again and retry.",
            ),
            Error::CsrfRejected { .. } => (
                StatusCode::FORBIDDEN,
                "This form has expired. Reload the page and try again.",
            ),
            Error::NotFound { .. } => (StatusCode::NOT_FOUND, "There is nothing here."),
            Error::MethodNotAllowed { .. } => (
                StatusCode::METHOD_NOT_ALLOWED,
                "This address does not take this method.",
            ),
            Error::InvalidInput { .. } => (StatusCode::BAD_REQUEST, "The request is not valid."),
            Error::TooLong { .. } => (
                StatusCode::BAD_REQUEST,
                "A text of the request is too long.",
            ),
            Error::SignInFailed { .. } => (
                StatusCode::UNAUTHORIZED,
                "The account, email or password is not right.",
            ),
            Error::RateLimited { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many sign-in attempts. Wait a little and try again.",
            ),
            Error::ClientRateLimited { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many requests from your address. Wait a little and try again.",
            ),
            Error::PasswordWorkBusy { .. } => (
                StatusCode::SERVICE_UNAVAILABLE,
                "The server is busy checking passwords. Try again in a moment.",
            ),
            Error::RepairRefused { .. } => (
                StatusCode::CONFLICT,
                "The repair was refused; nothing was saved.",
            ),
            Error::RunConflict { .. } => (
                StatusCode::CONFLICT,
                "The run is not waiting for this decision (it may have been decided already).",
            ),
            Error::WorkflowsUnavailable { .. } => (
                StatusCode::SERVICE_UNAVAILABLE,
                "Workflows are not available on this server.",
            ),
            Error::WorkflowInvalid { .. } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "The workflow does not validate; `stepward check` shows its problems.",
            ),
            Error::DefinitionRefused { .. } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "Nothing was written: a workflow or agent file does not validate, holds a \
                 current value of this account, or is not where definitions go.",
            ),
            Error::RunRefused { .. } => (
                StatusCode::BAD_REQUEST,
                "The run was refused: its inputs do not match the workflow's, hold a credential \
                 (credentials are never inputs; use a connection), or a step needs what this \
                 server cannot give.",
            ),
            Error::VaultUnavailable { .. } => (
                StatusCode::SERVICE_UNAVAILABLE,
                "The vault is not available on this server.",
            ),
            Error::InterviewRefused { .. } => (
                StatusCode::CONFLICT,
                "The interview cannot do this now; nothing was saved.",
            ),
            Error::NoAssistant { .. } => (
                StatusCode::CONFLICT,
                "There is no assistant for this account, so there is no interview: a person                  writes the workflow.",
            ),
            Error::ModelsUnavailable { .. } => (
                StatusCode::SERVICE_UNAVAILABLE,
                "Models are not available on this server.",
            ),
            Error::Vault {
                source:
                    vault::Error::InvalidName { .. }
                    | vault::Error::EmptyValue { .. }
                    | vault::Error::ValueTooShort { .. },
                ..
            } => (
                StatusCode::BAD_REQUEST,
                "The secret's name or value is not acceptable (names are letters, digits and \
                 underscores; values are at least 8 bytes).",
            ),
            Error::Vault {
                source: vault::Error::NotFound { .. },
                ..
            } => (StatusCode::NOT_FOUND, "There is nothing here."),
            Error::Workspace {
                source:
                    workspace::Error::HoldsSecret { .. }
                    | workspace::Error::PathHoldsSecret { .. }
                    | workspace::Error::MessageHoldsSecret,
                ..
            } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "Nothing was written: a path, the message or a file holds a current credential \
                 value of this account (credentials belong in the vault).",
            ),
            Error::Workspace {
                source: workspace::Error::QuotaExceeded { .. },
                ..
            } => (
                StatusCode::INSUFFICIENT_STORAGE,
                "Nothing was written: the account's workspace history is full (it keeps every \
                 revision). Ask the operator for a larger quota.",
            ),
            Error::Workspace {
                source: workspace::Error::PathConflict { .. },
                ..
            } => (
                StatusCode::CONFLICT,
                "Nothing was written: a path does not fit the workspace (a file where a folder \
                 is needed, a folder where the file goes, or a link on the way).",
            ),
            Error::Workspace {
                source:
                    workspace::Error::Protected { .. }
                    | workspace::Error::DuplicatePath { .. }
                    | workspace::Error::EmptyRevision,
                ..
            } => (
                StatusCode::BAD_REQUEST,
                "Nothing was written: a path is protected (such as .secrets) or named twice.",
            ),
            Error::MissingPolicy { .. }
            | Error::Workspace { .. }
            | Error::WorkflowSource(_)
            | Error::Vault { .. }
            | Error::Engine { .. }
            | Error::EngineOperation { .. }
            | Error::WorkspaceWrites { .. }
            | Error::Storage { .. }
            | Error::PeopleRefused { .. }
            | Error::Auth { .. }
            | Error::Redact { .. }
            | Error::PasswordWorkFailed { .. }
            | Error::Blocking { .. } => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong on our side. Quote the request id when you report it.",
            ),
        }
    }

    /// The stable code of the answer's JSON body (one of `api_types::ERROR_CODES`).
    pub fn code(&self) -> &'static str {
        match self {
            Error::Unauthenticated { .. } => "unauthenticated",
            Error::Forbidden { .. } => "forbidden",
            Error::RoleRule { .. } => "role_rule",
            Error::Conflict { .. }
            | Error::KeysChanged { .. }
            | Error::NewOwnerNeverSignedIn { .. }
            | Error::AlreadySignedIn { .. } => "conflict",
            Error::CsrfRejected { .. } => "csrf_token_missing",
            Error::NotFound { .. } => "not_found",
            Error::MethodNotAllowed { .. } => "method_not_allowed",
            Error::InvalidInput { .. } => "invalid_input",
            Error::TooLong { .. } => "too_long",
            Error::SignInFailed { .. } => "sign_in_failed",
            Error::RateLimited { .. } | Error::ClientRateLimited { .. } => "rate_limited",
            Error::PasswordWorkBusy { .. } => "busy",
            Error::RunConflict { .. } => "run_conflict",
            Error::RepairRefused { .. } => "repair_refused",
            Error::WorkflowsUnavailable { .. } => "workflows_unavailable",
            Error::WorkflowInvalid { .. } => "workflow_invalid",
            Error::DefinitionRefused { .. } => "definition_refused",
            Error::RunRefused { .. } => "run_refused",
            Error::VaultUnavailable { .. } => "vault_unavailable",
            Error::ModelsUnavailable { .. } => "models_unavailable",
            Error::InterviewRefused { .. } => "interview_refused",
            Error::NoAssistant { .. } => "no_assistant",
            Error::Vault {
                source:
                    vault::Error::InvalidName { .. }
                    | vault::Error::EmptyValue { .. }
                    | vault::Error::ValueTooShort { .. },
                ..
            } => "invalid_secret",
            Error::Vault {
                source: vault::Error::NotFound { .. },
                ..
            } => "not_found",
            Error::Workspace {
                source:
                    workspace::Error::HoldsSecret { .. }
                    | workspace::Error::PathHoldsSecret { .. }
                    | workspace::Error::MessageHoldsSecret,
                ..
            } => "holds_secret",
            Error::Workspace {
                source: workspace::Error::QuotaExceeded { .. },
                ..
            } => "workspace_full",
            Error::Workspace {
                source: workspace::Error::PathConflict { .. },
                ..
            } => "path_conflict",
            Error::Workspace {
                source:
                    workspace::Error::Protected { .. }
                    | workspace::Error::DuplicatePath { .. }
                    | workspace::Error::EmptyRevision,
                ..
            } => "path_refused",
            Error::MissingPolicy { .. }
            | Error::Workspace { .. }
            | Error::WorkflowSource(_)
            | Error::Vault { .. }
            | Error::Engine { .. }
            | Error::EngineOperation { .. }
            | Error::WorkspaceWrites { .. }
            | Error::Storage { .. }
            | Error::PeopleRefused { .. }
            | Error::Auth { .. }
            | Error::Redact { .. }
            | Error::PasswordWorkFailed { .. }
            | Error::Blocking { .. } => "internal",
        }
    }

    /// The message of a JSON API answer, where an API client needs other words than a person
    /// at a form: which header carries the CSRF token, what was not found.
    fn api_message(&self) -> Option<String> {
        match self {
            Error::CsrfRejected { .. } => Some(
                "This request needs the session's CSRF token in the X-CSRF-Token header (the \
                 `csrf_token` of POST /api/signin); a request with an API key needs none."
                    .to_owned(),
            ),
            Error::NotFound { what, .. }
                if matches!(
                    *what,
                    "run" | "workflow" | "file" | "person" | "API key" | "model provider"
                ) =>
            {
                // Not the id: a 404 never echoes the request, and another account's resource
                // reads the same as a missing one.
                Some(format!(
                    "There is no {what} by that name or id in your account."
                ))
            }
            _ => None,
        }
    }

    /// The message a console page shows for this error: the safe message and, for an invalid
    /// input, our own words about the field (the text of the error page).
    pub(crate) fn page_message(&self) -> String {
        let (_, message) = self.status_and_public_message();
        match self.public_detail() {
            Some(detail) => format!("{message} {detail}"),
            None => message.to_owned(),
        }
    }

    /// The part of an invalid input that is safe to show (our own words about a field).
    fn public_detail(&self) -> Option<String> {
        match self {
            Error::InvalidInput { field, reason } => Some(format!("{field}: {reason}")),
            // Our own words about the interview and the account's providers.
            Error::InterviewRefused { reason } => Some(reason.clone()),
            Error::NoAssistant { why } => Some(why.clone()),
            // The place is ours (a field name of the schema, an index, a connection's field
            // name already bounded); the text itself is never repeated.
            Error::TooLong { .. } => Some(self.to_string()),
            // The engine's and the checks' own words (scrubbed again on the way out).
            Error::RepairRefused { reason, .. } => Some(reason.clone()),
            // The engine's own words about the request's inputs and this server (names,
            // kinds and settings, never a value).
            Error::RunRefused { source, .. }
                if matches!(
                    **source,
                    engine::Error::InputMismatch { .. }
                        | engine::Error::ForbiddenInputKeys { .. }
                        | engine::Error::CannotRunHere { .. }
                ) =>
            {
                Some(source.to_string())
            }
            // The parser's diagnostics (file:line:col) and our own words; a value is named by
            // its line, never shown.
            Error::DefinitionRefused { source } => {
                let mut detail = source.to_string();
                if let engine::DefinitionWriteError::Invalid { diagnostics, .. } = source {
                    for diagnostic in diagnostics.iter().skip(1) {
                        detail.push('\n');
                        detail.push_str(&diagnostic.to_string());
                    }
                }
                Some(detail)
            }
            // Our own words about the request's own paths (already screened for values).
            Error::Workspace {
                source: workspace::Error::PathConflict { path, reason },
                ..
            } => Some(format!("{path}: {reason}")),
            _ => None,
        }
    }
}

/// What the outermost middleware needs to log and render an error answer.
#[derive(Debug, Clone)]
pub(crate) struct ErrorReport {
    pub(crate) public_message: String,
    /// The message of a JSON API answer (the same words unless the API needs others).
    pub(crate) api_message: String,
    pub(crate) code: &'static str,
    /// The whole error with its sources, for the log only.
    pub(crate) detail: String,
}

/// The report of a refusal the framework answered in plain text before any handler ran:
/// its words, said in ours, under a code of the documented list. The log names the kind of
/// refusal only: the framework's words can quote what the request held.
pub(crate) fn rejection_report(status: StatusCode, said: &str) -> ErrorReport {
    let said = said.trim();
    let after = |prefix: &str| said.strip_prefix(prefix).map(str::trim);
    let (code, message, kind) = if status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        (
            "unsupported_media_type",
            "send the body as JSON, with the header `Content-Type: application/json`".to_owned(),
            "content type",
        )
    } else if status == StatusCode::PAYLOAD_TOO_LARGE {
        (
            "too_large",
            "the request's body is larger than this route takes".to_owned(),
            "body size",
        )
    } else if let Some(why) = after("Failed to parse the request body as JSON:") {
        (
            "invalid_json",
            format!("the body is not valid JSON: {why}"),
            "body syntax",
        )
    } else if let Some(why) = after("Failed to deserialize the JSON body into the target type:") {
        (
            "invalid_input",
            format!("the body does not have this request's fields (see /api/openapi.json): {why}"),
            "body shape",
        )
    } else if let Some(why) = after("Failed to deserialize query string:") {
        (
            "invalid_input",
            format!("a query parameter is not valid: {why}"),
            "query",
        )
    } else if let Some(why) = after("Invalid URL:") {
        (
            "invalid_input",
            format!("a value in the path is not valid: {why}"),
            "path",
        )
    } else {
        (
            "invalid_input",
            format!("the request is not valid: {said}"),
            "request",
        )
    };
    let message = text_limits_cut(&message);
    ErrorReport {
        public_message: message.clone(),
        api_message: message,
        code,
        detail: format!("refused before any handler ran ({kind})"),
    }
}

/// A framework's message cut to what an answer shows.
fn text_limits_cut(message: &str) -> String {
    const MAX_CHARS: usize = 500;
    if message.chars().count() <= MAX_CHARS {
        return message.to_owned();
    }
    let mut cut: String = message.chars().take(MAX_CHARS).collect();
    cut.push('…');
    cut
}

fn detail_with_sources(error: &Error) -> String {
    let mut detail = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        detail.push_str(": ");
        detail.push_str(&cause.to_string());
        source = cause.source();
    }
    detail
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let (status, _) = self.status_and_public_message();
        let public_message = self.page_message();
        let mut response = status.into_response();
        if let Error::RateLimited {
            retry_after_millis, ..
        }
        | Error::ClientRateLimited {
            retry_after_millis, ..
        }
        | Error::PasswordWorkBusy {
            retry_after_millis, ..
        } = &self
        {
            let seconds = retry_after_millis.div_ceil(1000).max(1);
            if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
        }
        if let Error::MethodNotAllowed { allowed, .. } = &self
            && let Ok(value) = HeaderValue::from_str(allowed)
        {
            response.headers_mut().insert(header::ALLOW, value);
        }
        let api_message = match self.api_message() {
            Some(message) => message,
            None => public_message.clone(),
        };
        response.extensions_mut().insert(ErrorReport {
            public_message,
            api_message,
            code: self.code(),
            detail: detail_with_sources(&self),
        });
        response
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::Error;

    #[test]
    fn a_route_without_a_policy_is_a_500_that_names_nothing() {
        let error = Error::MissingPolicy {
            method: "GET".into(),
            route: "/secret/{id}".into(),
        };
        let (status, message) = error.status_and_public_message();
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!message.contains("/secret"));
        assert!(
            error.to_string().contains("/secret/{id}"),
            "the log names the route"
        );
    }

    /// The log's detail of a nested error names each context once and each cause once: an
    /// error prints its own words and leaves its cause to `source()` (issue 18).
    #[test]
    fn a_nested_error_in_the_log_names_each_cause_once() {
        let backend = || storage::Error::Backend {
            operation: "append an event",
            source: Box::new(std::io::Error::other("disk I/O error at page 7")),
        };
        let cases = [
            (
                Error::Engine {
                    run: "run-1".into(),
                    source: Box::new(engine::Error::Storage(backend())),
                },
                "engine failed on run run-1: storage backend failed during append an event: \
                 disk I/O error at page 7",
            ),
            (
                Error::Vault {
                    operation: "set a secret",
                    source: vault::Error::Store { source: backend() },
                },
                "the vault failed during set a secret: vault storage failed: storage backend \
                 failed during append an event: disk I/O error at page 7",
            ),
        ];
        for (error, expected) in cases {
            let detail = super::detail_with_sources(&error);
            assert_eq!(detail, expected);
            let mut cause: Option<&dyn std::error::Error> = Some(&error);
            while let Some(current) = cause {
                let own = current.to_string();
                assert_eq!(detail.matches(&own).count(), 1, "{own:?} in {detail:?}");
                cause = current.source();
            }
        }
    }

    #[test]
    fn refusals_map_to_their_statuses() {
        let cases = [
            (
                Error::Unauthenticated {
                    method: "GET".into(),
                    route: "/api/runs".into(),
                },
                StatusCode::UNAUTHORIZED,
            ),
            (
                Error::CsrfRejected {
                    method: "POST".into(),
                    route: "/signout".into(),
                },
                StatusCode::FORBIDDEN,
            ),
            (
                Error::NotFound {
                    what: "run",
                    id: "run-1".into(),
                },
                StatusCode::NOT_FOUND,
            ),
            (
                Error::RateLimited {
                    account: "acct".into(),
                    retry_after_millis: 1,
                },
                StatusCode::TOO_MANY_REQUESTS,
            ),
        ];
        for (error, status) in cases {
            assert_eq!(error.status_and_public_message().0, status, "{error}");
        }
    }
}
