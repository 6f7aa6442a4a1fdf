//! The per-run context the engine works in: the run row, its re-parsed workflow, its secret
//! set and redactor; and the two writes everything else is built from (an event, a status).

use redact::{Redactor, RunSecrets, SecretName, SecretRequest, SecretValue};
use spec::{Step, Workflow};
use storage::{AccountId, NewEvent, RunId, RunRecord, RunStatus, Sha256Hex, Timestamp};

use crate::Error;
use crate::engine::Engine;
use crate::journal::{Event, RunStatusChanged, SecretsUnavailable, UnavailableConnection};

/// A run being worked on.
pub(crate) struct RunContext {
    pub(crate) run: RunRecord,
    pub(crate) workflow: Workflow,
    pub(crate) secrets: RunSecrets,
    pub(crate) redactor: Redactor,
    /// Connection aliases the source could not give, with the reason (names only).
    pub(crate) unavailable: Vec<(String, String)>,
    /// What the run pinned when it started (issue 16 §1).
    pub(crate) pinned: crate::definitions::PinnedDefinitions,
}

/// How far before a stored run's creation time a resume in a new process asks for superseded
/// values: the run's values were looked up a moment before its creation time was taken, and
/// the vault stamps its changes with its own reading of the clock. Scrubbing a few more old
/// values of the run's own names costs nothing; missing one the run saw would leak it.
const SUPERSEDED_LOOKBACK_MILLIS: i64 = 5 * 60 * 1000;

/// Whose secrets [`Engine::collect_secrets`] collects.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SecretsFor {
    /// A run being created: it has seen no value yet.
    NewRun,
    /// A stored run being continued, created at this time: it may have seen (and printed)
    /// values that were replaced, removed or revoked since.
    StoredRun { created_at: Timestamp },
}

/// What a workflow asks the secret source for: every connection any step names.
pub(crate) fn secret_request(workflow: &Workflow) -> SecretRequest {
    let mut connections: Vec<String> = Vec::new();
    for step in workflow.steps() {
        for alias in step.connections() {
            if !connections.contains(alias) {
                connections.push(alias.clone());
            }
        }
    }
    SecretRequest {
        connections,
        ..SecretRequest::default()
    }
}

/// The environment of one step: `CONN_<ALIAS>_<FIELD>` for every field of every connection it
/// is granted, or why it cannot be built (a connection missing or revoked, two fields that
/// would share a variable name).
pub(crate) fn step_env<'a>(
    step: &Step,
    secrets: &'a RunSecrets,
    unavailable: &[(String, String)],
) -> Result<Vec<(String, &'a SecretValue)>, String> {
    let names = secrets.names();
    let mut pairs = Vec::new();
    let mut env = Vec::new();
    for alias in step.connections() {
        if let Some((_, reason)) = unavailable.iter().find(|(missing, _)| missing == alias) {
            return Err(format!(
                "step `{}` needs the connection `{alias}`, which is not available: {reason}",
                step.id()
            ));
        }
        let mut found = false;
        for name in &names {
            if let SecretName::ConnectionField {
                alias: field_alias,
                field,
            } = name
                && field_alias == alias
                && let Some(value) = secrets.get(name)
            {
                found = true;
                pairs.push((alias.clone(), field.clone()));
                env.push((spec::connection_env_name(alias, field), value));
            }
        }
        if !found {
            return Err(format!(
                "step `{}` needs the connection `{alias}`, which has no fields",
                step.id()
            ));
        }
    }
    if let Some((variable, first, second)) = spec::env_name_collisions(&pairs).into_iter().next() {
        return Err(format!(
            "step `{}`: the connection fields `{}.{}` and `{}.{}` would both be the variable \
             `{variable}`",
            step.id(),
            first.0,
            first.1,
            second.0,
            second.1
        ));
    }
    Ok(env)
}

impl Engine {
    /// Parses a workflow's own text again and checks it gives the same value (G1).
    pub(crate) fn revalidate(&self, workflow: &Workflow) -> Result<(), Error> {
        match spec::parse_workflow_within(
            workflow.file_name(),
            workflow.source(),
            &self.options.limit_maxima,
        ) {
            Ok(parsed) if parsed == *workflow => Ok(()),
            Ok(_) => Err(Error::WorkflowChanged {
                file: workflow.file_name().to_owned(),
            }),
            Err(diagnostics) => Err(Error::WorkflowInvalid {
                file: workflow.file_name().to_owned(),
                diagnostics,
            }),
        }
    }

    /// Collects the run's secrets: everything available, and the aliases that are not (with
    /// the source's reason, which names them). A stored run (one continued after a gate, a
    /// retry or a restart) also keeps the values of its names superseded since it was created
    /// in its own scrub set, never in its environment (G16); its redactor scrubs every value
    /// the account keeps anyway.
    pub(crate) fn collect_secrets(
        &self,
        run: &RunId,
        account: &AccountId,
        request: &SecretRequest,
        whose: SecretsFor,
    ) -> Result<(RunSecrets, Vec<(String, String)>), Error> {
        let mut available = request.clone();
        let mut unavailable = Vec::new();
        if self.secrets.resolve(account, request).is_err() {
            available.connections.clear();
            for alias in &request.connections {
                let single = SecretRequest {
                    connections: vec![alias.clone()],
                    ..SecretRequest::default()
                };
                match self.secrets.resolve(account, &single) {
                    Ok(_) => available.connections.push(alias.clone()),
                    Err(error) => unavailable.push((alias.clone(), error.to_string())),
                }
            }
        }
        let secrets_error = |source| Error::Secrets {
            run: run.clone(),
            source,
        };
        let secrets = match whose {
            SecretsFor::NewRun => RunSecrets::collect(run, account, &self.scrub_sets, &available)
                .map_err(secrets_error)?,
            SecretsFor::StoredRun { created_at } => {
                let since = created_at.0.saturating_sub(SUPERSEDED_LOOKBACK_MILLIS);
                let mut secrets = RunSecrets::collect_for_resume(
                    run,
                    account,
                    &self.scrub_sets,
                    &available,
                    since,
                )
                .map_err(secrets_error)?;
                // A connection removed or revoked while the run waited cannot be resolved, but
                // the run may have seen its values before: they are scrubbed too.
                if !unavailable.is_empty() {
                    let gone = SecretRequest {
                        connections: unavailable.iter().map(|(alias, _)| alias.clone()).collect(),
                        ..SecretRequest::default()
                    };
                    secrets
                        .keep_superseded(&gone, since)
                        .map_err(secrets_error)?;
                }
                secrets
            }
        };
        Ok((secrets, unavailable))
    }

    /// A stored run's workflow, parsed again from its stored text (G1).
    pub(crate) fn parse_stored_workflow(&self, record: &RunRecord) -> Result<Workflow, Error> {
        spec::parse_workflow_within(
            &record.workflow_file_name,
            &record.workflow_source,
            &self.options.limit_maxima,
        )
        .map_err(|diagnostics| Error::StoredWorkflowInvalid {
            run: record.id.clone(),
            detail: diagnostics
                .first()
                .map(ToString::to_string)
                .unwrap_or_else(|| "no diagnostics".to_owned()),
        })
    }

    /// Loads a stored run to continue it: parses its stored workflow again (G1) and looks its
    /// secrets up again (G18).
    pub(crate) fn load_context(&self, run: &RunId) -> Result<RunContext, Error> {
        let record = self
            .store
            .run(run)?
            .ok_or_else(|| Error::UnknownRun { run: run.clone() })?;
        // The stored text must be exactly what was checked when the run started: a text edited
        // in the database, or one that held a credential value and was scrubbed, is refused
        // rather than run as something nobody confirmed (G1).
        let stored_hash = Sha256Hex::of(record.workflow_source.as_bytes());
        if stored_hash.as_str() != record.workflow_hash {
            return Err(Error::StoredWorkflowInvalid {
                run: run.clone(),
                detail: "the stored workflow text no longer matches the hash recorded when the \
                         run started"
                    .to_owned(),
            });
        }
        let workflow = self.parse_stored_workflow(&record)?;
        let (secrets, unavailable) = self.collect_secrets(
            run,
            &record.account,
            &secret_request(&workflow),
            SecretsFor::StoredRun {
                created_at: record.created_at,
            },
        )?;
        let redactor = secrets.redactor();
        let pinned = self.pinned_definitions(&record.account, run)?;
        let context = RunContext {
            run: record,
            workflow,
            secrets,
            redactor,
            unavailable,
            pinned,
        };
        if !context.unavailable.is_empty() {
            self.event(&context, unavailable_event(&context.unavailable))?;
        }
        Ok(context)
    }

    /// Appends one event, scrubbed with the run's redactor.
    pub(crate) fn event(&self, context: &RunContext, event: Event) -> Result<u64, Error> {
        let event = self.new_event(context, event)?;
        Ok(self.store.append(&context.run.id, &event)?)
    }

    /// An event to write together with a state change: its payload in this version's shape,
    /// scrubbed with the run's redactor.
    pub(crate) fn new_event(&self, context: &RunContext, event: Event) -> Result<NewEvent, Error> {
        stored_event(&context.redactor, &event, self.clock.now())
    }

    /// Sets the run's status and records the change as an event, in one write.
    pub(crate) fn set_status(
        &self,
        context: &mut RunContext,
        status: RunStatus,
        reason: Option<&str>,
    ) -> Result<(), Error> {
        let event = self.new_event(
            context,
            Event::RunStatus(RunStatusChanged {
                status,
                reason: reason.map(str::to_owned),
            }),
        )?;
        self.store
            .set_run_status(&context.run.id, status, event.at, &event)?;
        context.run.status = status;
        Ok(())
    }
}

/// The names (never values) of what could not be resolved.
pub(crate) fn unavailable_event(unavailable: &[(String, String)]) -> Event {
    Event::SecretsUnavailable(SecretsUnavailable {
        connections: unavailable
            .iter()
            .map(|(alias, reason)| UnavailableConnection {
                alias: alias.clone(),
                reason: reason.clone(),
            })
            .collect(),
    })
}

/// An event as the store takes it: its kind's stable name, the journal version it is written
/// in ([`Event::version`]), and its payload scrubbed by `redactor`.
pub(crate) fn stored_event(
    redactor: &Redactor,
    event: &Event,
    at: Timestamp,
) -> Result<NewEvent, Error> {
    let kind = event.kind().as_str();
    let payload = event
        .payload_json()
        .map_err(|source| Error::JournalEncode { kind, source })?;
    Ok(NewEvent {
        kind,
        version: event.version(),
        payload: redactor.scrub_json(&payload),
        at,
    })
}
