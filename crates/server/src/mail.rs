//! Approve links by mail (issue 41). Parking a run at a gate writes a row to the store's
//! outbox in the park's own transaction (`storage::mail`); a server started with `--smtp`
//! drains it: it claims due rows for a while, checks that the gate still waits, mails its
//! approve link to the people who may decide it, and records what happened (the row, shown on
//! the run page, and a `gate.mail` audit entry).
//!
//! - Delivery never blocks a run (parking only writes a row) and never depends on one process:
//!   any server with `--smtp` drains every row; a claim that runs out is due again, so a mail
//!   goes out at least once, and the same link twice is harmless.
//! - The link is derived when the mail is sent, under the key then in force, and is never
//!   stored: a rotated key kills every link mailed before it.
//! - The mail holds the workflow's and the step's names, the step's explanation and the link,
//!   never the step's inputs or outputs, and its text goes through the account's scrubber.
//! - SMTP through `lettre`: STARTTLS is required, never opportunistic (a server that does not
//!   offer it gets nothing), or implicit TLS (`smtps://`); plain SMTP only when asked for and
//!   only to a loopback address.
//! - Who is mailed is decided when the mail goes out: people of the run's account whose role
//!   decides gates, narrowed to the ones `notify:` names; a named person who no longer may
//!   decide is left out, and the run page says so.

use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt;
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, Message};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, CertificateStore, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use serde_json::json;
use storage::mail::{GateMail, GateMailOutcome, MAX_CLAIMED_MAIL};
use storage::{Actor, AuditAction, GateRef, NewAuditEntry, StepId, Timestamp};
use zeroize::Zeroizing;

use crate::AppState;
use crate::state::Shared;

/// How often a draining server looks for due mail.
pub const MAIL_POLL: Duration = Duration::from_secs(5);
/// How long a claim holds a row: longer than sending one row's mails can take.
const CLAIM_FOR: Duration = Duration::from_secs(15 * 60);
/// The deadline of each SMTP exchange.
const SMTP_TIMEOUT: Duration = Duration::from_secs(30);
/// The first wait after a failed send; each later one doubles, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(30);
const MAX_BACKOFF: Duration = Duration::from_secs(60 * 60);
/// Failed tries in a row after which a mail is given up (about four hours of trying).
pub const MAX_TRIES: u32 = 10;
/// A run that parked but does not yet say it waits is looked at again this soon.
const NOT_YET_AGAIN: Duration = Duration::from_secs(30);
/// The longest one row's mail may take, well within its claim.
const ROW_DEADLINE: Duration = Duration::from_secs(10 * 60);
/// A row that could not be settled (the store failed, it panicked) is looked at again then.
const AFTER_A_FAULT: Duration = Duration::from_secs(60);
/// The longest explanation a mail quotes, in characters.
const MAX_EXPLAIN_CHARS: usize = 2000;
/// The longest workflow, step or person's name a mail shows, in characters.
const MAX_NAME_CHARS: usize = 200;
/// The most people one gate's mail goes to.
pub const MAX_RECIPIENTS: usize = 50;

/// How the connection to the SMTP server is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpSecurity {
    /// `smtp://`: STARTTLS, required; a server that does not offer it gets nothing.
    StartTls,
    /// `smtps://`: TLS from the first byte.
    ImplicitTls,
    /// `smtp://` with `--smtp-plain`: no TLS, only to a loopback address.
    PlainLoopback,
}

/// Why the mail settings cannot be used; each names what to pass instead.
#[derive(Debug, thiserror::Error)]
pub enum MailSetupError {
    #[error("--smtp `{url}` is not a URL: {reason}; write smtp://HOST:PORT or smtps://HOST:PORT")]
    Url { url: String, reason: String },
    #[error(
        "--smtp `{url}` carries a password: it would show in the process list and the shell's \
         history; pass it with --smtp-password-file or STEPWARD_SMTP_PASSWORD"
    )]
    PasswordInUrl { url: String },
    #[error(
        "--smtp-plain sends mail unencrypted, so only to a loopback address, not to `{host}`; \
             use smtp:// (STARTTLS) or smtps://"
    )]
    PlainBeyondLoopback { host: String },
    #[error(
        "an SMTP password was given, but --smtp names no user: write smtp://USER@HOST:PORT, or \
         leave the password out"
    )]
    PasswordWithoutUser,
    #[error("--smtp-plain goes with smtp://, not smtps://")]
    PlainWithImplicitTls,
    #[error("--smtp-from `{from}` is not a mail address: {reason}")]
    From { from: String, reason: String },
    #[error("--smtp-ca holds no PEM certificate lettre accepts: {reason}")]
    Ca { reason: String },
    #[error("the SMTP client cannot be set up: {reason}")]
    Client { reason: String },
}

/// What `--smtp`, `--smtp-from`, the password and `--smtp-ca` say.
#[derive(Clone)]
pub struct SmtpSettings {
    host: String,
    port: u16,
    security: SmtpSecurity,
    user: Option<String>,
    password: Option<Zeroizing<String>>,
    from: Mailbox,
    /// PEM: the only roots trusted, instead of the platform's.
    ca_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for SmtpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpSettings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("user", &self.user)
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

impl SmtpSettings {
    /// `url`: `smtp://[USER@]HOST[:PORT]` (STARTTLS, port 587) or `smtps://[USER@]HOST[:PORT]`
    /// (implicit TLS, port 465); `plain`: `--smtp-plain` (no TLS; loopback only).
    pub fn parse(
        url: &str,
        from: &str,
        password: Option<Zeroizing<String>>,
        ca_pem: Option<Vec<u8>>,
        plain: bool,
    ) -> Result<SmtpSettings, MailSetupError> {
        // A URL that does not parse is not echoed: it may carry a password.
        let parsed = url::Url::parse(url).map_err(|error| MailSetupError::Url {
            url: "(not shown)".to_owned(),
            reason: error.to_string(),
        })?;
        if parsed.password().is_some() {
            return Err(MailSetupError::PasswordInUrl {
                url: parsed.host_str().unwrap_or_default().to_owned(),
            });
        }
        let bad = |reason: String| MailSetupError::Url {
            url: format!(
                "{}://{}",
                parsed.scheme(),
                parsed.host_str().unwrap_or_default()
            ),
            reason,
        };
        let (security, default_port) = match (parsed.scheme(), plain) {
            ("smtp", false) => (SmtpSecurity::StartTls, 587),
            ("smtp", true) => (SmtpSecurity::PlainLoopback, 25),
            ("smtps", false) => (SmtpSecurity::ImplicitTls, 465),
            ("smtps", true) => return Err(MailSetupError::PlainWithImplicitTls),
            (other, _) => return Err(bad(format!("the scheme `{other}` is not smtp or smtps"))),
        };
        if !matches!(parsed.path(), "" | "/") || parsed.query().is_some() {
            return Err(bad(
                "it has a path or a query, which SMTP has none of".to_owned()
            ));
        }
        let host = match parsed.host() {
            Some(url::Host::Domain(domain)) => domain.to_owned(),
            Some(url::Host::Ipv4(address)) => address.to_string(),
            Some(url::Host::Ipv6(address)) => address.to_string(),
            None => return Err(bad("it names no host".to_owned())),
        };
        if security == SmtpSecurity::PlainLoopback && !is_loopback(&host) {
            return Err(MailSetupError::PlainBeyondLoopback { host });
        }
        let user = match parsed.username() {
            "" if password.is_some() => return Err(MailSetupError::PasswordWithoutUser),
            "" => None,
            user => Some(
                percent_encoding::percent_decode_str(user)
                    .decode_utf8_lossy()
                    .into_owned(),
            ),
        };
        let from_box: Mailbox =
            from.parse().map_err(
                |error: lettre::address::AddressError| MailSetupError::From {
                    from: from.to_owned(),
                    reason: error.to_string(),
                },
            )?;
        if let Some(pem) = &ca_pem {
            Certificate::from_pem(pem).map_err(|error| MailSetupError::Ca {
                reason: error.to_string(),
            })?;
        }
        Ok(SmtpSettings {
            host,
            port: parsed.port().unwrap_or(default_port),
            security,
            user,
            password,
            from: from_box,
            ca_pem,
        })
    }

    /// The server mail goes to and how, for the start's line: never the password.
    pub fn describe(&self) -> String {
        let how = match self.security {
            SmtpSecurity::StartTls => "STARTTLS required",
            SmtpSecurity::ImplicitTls => "implicit TLS",
            SmtpSecurity::PlainLoopback => "plain, loopback only",
        };
        format!(
            "{}:{} ({how}{}), from {}",
            self.host,
            self.port,
            if self.ca_pem.is_some() {
                ", trusting only --smtp-ca"
            } else {
                ""
            },
            self.from
        )
    }
}

/// A literal loopback address: no name, which a resolver could answer otherwise.
fn is_loopback(host: &str) -> bool {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .is_ok_and(|address| address.is_loopback())
}

/// Drains the outbox over one SMTP server.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// The server's address as people reach it: the links start with it.
    link_base: String,
    /// Who holds a claim: this process.
    claimer: String,
}

/// What one pass over the outbox did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    pub sent: u32,
    pub failed: u32,
    pub closed: u32,
}

impl Mailer {
    pub fn new(settings: &SmtpSettings, link_base: &str) -> Result<Mailer, MailSetupError> {
        let client = |error: lettre::transport::smtp::Error| MailSetupError::Client {
            reason: error.to_string(),
        };
        let tls_parameters = || -> Result<TlsParameters, MailSetupError> {
            let mut builder = TlsParameters::builder(settings.host.clone());
            if let Some(pem) = &settings.ca_pem {
                let certificate =
                    Certificate::from_pem(pem).map_err(|error| MailSetupError::Ca {
                        reason: error.to_string(),
                    })?;
                builder = builder
                    .certificate_store(CertificateStore::None)
                    .add_root_certificate(certificate);
            }
            builder.build_rustls().map_err(client)
        };
        let tls = match settings.security {
            SmtpSecurity::StartTls => Tls::Required(tls_parameters()?),
            SmtpSecurity::ImplicitTls => Tls::Wrapper(tls_parameters()?),
            SmtpSecurity::PlainLoopback => Tls::None,
        };
        let mut builder =
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(settings.host.clone())
                .port(settings.port)
                .tls(tls)
                .timeout(Some(SMTP_TIMEOUT));
        if let Some(user) = &settings.user {
            let password = settings
                .password
                .as_ref()
                .map(|password| password.as_str().to_owned())
                .unwrap_or_default();
            builder = builder.credentials(Credentials::new(user.clone(), password));
        }
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(|error| MailSetupError::Client {
            reason: error.to_string(),
        })?;
        Ok(Mailer {
            transport: builder.build(),
            from: settings.from.clone(),
            link_base: link_base.trim_end_matches('/').to_owned(),
            claimer: format!("{}:{}", std::process::id(), hex::encode(nonce)),
        })
    }

    /// Drains the outbox every [`MAIL_POLL`] until `shutdown` resolves. A pass that fails
    /// (the store is busy) or panics is logged and tried again at the next tick: one bad row
    /// never stops the mail of every account.
    pub async fn run(self, state: AppState, shutdown: impl Future<Output = ()>) {
        let mut tick = tokio::time::interval(MAIL_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => return,
                _ = tick.tick() => {
                    match AssertUnwindSafe(self.drain(&state)).catch_unwind().await {
                        Ok(Ok(_)) => {}
                        Ok(Err(error)) => {
                            tracing::warn!(error = %error, "the mail outbox could not be drained");
                        }
                        Err(_) => tracing::error!("draining the mail outbox panicked"),
                    }
                }
            }
        }
    }

    /// One pass: claims the due rows a few at a time and settles each. A row that fails (the
    /// store, the scrubber, signing its link) is logged and looked at again a minute later;
    /// the others go on.
    pub async fn drain(&self, state: &AppState) -> Result<Drained, crate::Error> {
        let shared = &state.shared;
        let mut drained = Drained::default();
        loop {
            let now = shared.now();
            let until = later(now, CLAIM_FOR);
            let claimed = shared
                .store
                .claim_gate_mail(&self.claimer, now, until, MAX_CLAIMED_MAIL)
                .map_err(crate::Error::storage("claim due mail"))?;
            if claimed.is_empty() {
                return Ok(drained);
            }
            for row in claimed {
                let settled = AssertUnwindSafe(tokio::time::timeout(
                    ROW_DEADLINE,
                    self.settle(shared, &row),
                ))
                .catch_unwind()
                .await;
                match settled {
                    Ok(Ok(Ok(Settled::Sent))) => drained.sent += 1,
                    Ok(Ok(Ok(Settled::Failed))) => drained.failed += 1,
                    Ok(Ok(Ok(Settled::Closed))) => drained.closed += 1,
                    Ok(Ok(Ok(Settled::Later))) => {}
                    other => {
                        let why = match other {
                            Ok(Ok(Err(error))) => error.to_string(),
                            Ok(Err(_)) => "it took longer than its deadline".to_owned(),
                            _ => "it panicked".to_owned(),
                        };
                        tracing::warn!(run = %row.run, step = %row.step, "a mail was not settled: {why}");
                        self.record(
                            shared,
                            &row,
                            &GateMailOutcome::Later {
                                next_due: later(shared.now(), AFTER_A_FAULT),
                            },
                            None,
                        )?;
                    }
                }
            }
        }
    }

    async fn settle(&self, shared: &Shared, row: &GateMail) -> Result<Settled, crate::Error> {
        let now = shared.now();
        let redactor = crate::handlers::account_redactor(shared, &row.account)?;
        let gate = match self.still_waiting(shared, row)? {
            Waiting::Yes(gate) => gate,
            Waiting::NotYet => {
                self.record(
                    shared,
                    row,
                    &GateMailOutcome::Later {
                        next_due: later(now, NOT_YET_AGAIN),
                    },
                    None,
                )?;
                return Ok(Settled::Later);
            }
            Waiting::No => {
                self.record(shared, row, &GateMailOutcome::Closed { at: now }, None)?;
                return Ok(Settled::Closed);
            }
        };
        let (recipients, mut left_out) = recipients(shared, row)?;
        let reminder = row.mails_sent;
        let mut delivered = row.delivered.clone();
        let error = if recipients.is_empty() {
            Some("nobody of the account may decide this gate: nothing was sent".to_owned())
        } else {
            // Right before sending: a claim that ran out (another server took the row) sends
            // nothing twice.
            let held = shared
                .store
                .hold_gate_mail(row.id, &self.claimer, now, later(now, CLAIM_FOR))
                .map_err(crate::Error::storage("hold a mail's claim"))?;
            if !held {
                return Ok(Settled::Later);
            }
            let link = shared
                .approve_link_path_of(&gate)
                .map(|path| format!("{}{path}", self.link_base))?;
            let body = redactor.scrub(&self.body(row, &redactor, &link, reminder));
            let subject = redactor.scrub(&subject(row, &redactor, reminder));
            let pending: Vec<&Mailbox> = recipients
                .iter()
                .filter(|mailbox| !delivered.contains(&mailbox.email.to_string()))
                .collect();
            let report = self.send(&pending, subject.get(), body.get()).await;
            delivered.extend(report.delivered);
            left_out.extend(report.refused);
            match report.error {
                None if delivered.is_empty() => {
                    Some("the mail server refused every address: nothing was sent".to_owned())
                }
                error => error,
            }
        };
        let note = (!left_out.is_empty()).then(|| redactor.scrub(&left_out.join("; ")));
        let audit = |detail: serde_json::Value| NewAuditEntry {
            account: row.account.clone(),
            run: None,
            actor: redactor.scrub_fields(Actor::Engine),
            action: AuditAction::GateMail,
            detail: redactor.scrub_json(&detail),
            at: now,
        };
        match error {
            None => {
                let next_due = row
                    .remind_after_secs
                    .filter(|_| row.mails_sent < spec::MAX_REMINDERS)
                    .map(|secs| later(now, Duration::from_secs(secs).max(spec::MIN_REMIND_AFTER)));
                let entry = audit(json!({
                    "run": row.run.as_str(),
                    "step": row.step,
                    "attempt": row.attempt,
                    "outcome": "sent",
                    "reminder": reminder,
                    "to": delivered,
                }));
                self.record(
                    shared,
                    row,
                    &GateMailOutcome::Sent {
                        at: now,
                        recipients: delivered,
                        note,
                        next_due,
                    },
                    Some(&entry),
                )?;
                Ok(Settled::Sent)
            }
            Some(error) => {
                let tries = row.tries.saturating_add(1);
                let give_up = tries >= MAX_TRIES || recipients.is_empty();
                let next_due = (!give_up).then(|| later(now, backoff(tries)));
                let error = redactor.scrub(&error);
                let entry = audit(json!({
                    "run": row.run.as_str(),
                    "step": row.step,
                    "attempt": row.attempt,
                    "outcome": if give_up { "gave_up" } else { "failed" },
                    "try": tries,
                    "error": error.get(),
                    "delivered": delivered,
                }));
                self.record(
                    shared,
                    row,
                    &GateMailOutcome::Failed {
                        at: now,
                        delivered,
                        error,
                        note,
                        next_due,
                    },
                    Some(&entry),
                )?;
                Ok(Settled::Failed)
            }
        }
    }

    /// Whether the row's gate still waits for its attempt. A run that parked but does not
    /// say it waits yet (between its park and its wait, or stopped there by a crash that
    /// recovery parks again) is looked at again soon; anything else no longer waits.
    fn still_waiting(&self, shared: &Shared, row: &GateMail) -> Result<Waiting, crate::Error> {
        let step = StepId::parse(&row.step).map_err(|_| crate::Error::Storage {
            operation: "read a row of the mail outbox",
            source: storage::Error::Corrupt {
                what: "a row of the mail outbox",
                detail: format!("`{}` is not a step id", row.step),
            },
        })?;
        let gate = GateRef {
            account: row.account.clone(),
            run: row.run.clone(),
            step,
            attempt: row.attempt,
        };
        let pending = match shared.engine.pending_gate(&row.run) {
            Ok(pending) => pending,
            Err(engine::Error::UnknownRun { .. }) => None,
            Err(other) => {
                return Err(crate::Error::Engine {
                    run: row.run.to_string(),
                    source: Box::new(other),
                });
            }
        };
        if pending.as_ref() == Some(&gate) {
            return Ok(Waiting::Yes(gate));
        }
        let running = shared
            .store
            .run(&row.run)
            .map_err(crate::Error::storage("read the run of a mail"))?
            .is_some_and(|record| record.status == storage::RunStatus::Running);
        let parked_here = running
            && shared
                .store
                .parked(&row.run)
                .map_err(crate::Error::storage(
                    "read the parked state of a mail's run",
                ))?
                .is_some_and(|parked| parked.step_id == row.step);
        Ok(if parked_here {
            Waiting::NotYet
        } else {
            Waiting::No
        })
    }

    fn record(
        &self,
        shared: &Shared,
        row: &GateMail,
        outcome: &GateMailOutcome,
        entry: Option<&NewAuditEntry>,
    ) -> Result<(), crate::Error> {
        let held = shared
            .store
            .record_gate_mail(row.id, &self.claimer, outcome, entry)
            .map_err(crate::Error::storage("record a mail's outcome"))?;
        if !held {
            // The claim ran out and another server took the row: its outcome stands.
            tracing::info!(run = %row.run, step = %row.step, "a mail's claim ran out before its outcome was recorded");
        }
        Ok(())
    }

    /// One message per person, so nobody learns who else decides. An address the server
    /// refuses for good is left out and the others still get theirs; any other failure stops
    /// the try, and a retry mails only those who got nothing.
    async fn send(&self, to: &[&Mailbox], subject: &str, body: &str) -> SendReport {
        let mut report = SendReport::default();
        for mailbox in to {
            let address = mailbox.email.to_string();
            let message = match Message::builder()
                .from(self.from.clone())
                .to((*mailbox).clone())
                .subject(subject)
                .header(ContentType::TEXT_PLAIN)
                .body(body.to_owned())
            {
                Ok(message) => message,
                Err(error) => {
                    report
                        .refused
                        .push(format!("not mailed: {address} ({error})"));
                    continue;
                }
            };
            match self.transport.send(message).await {
                Ok(_) => report.delivered.push(address),
                Err(error) if error.is_permanent() => report.refused.push(format!(
                    "not mailed: {address} (the mail server refused it: {error})"
                )),
                Err(error) => {
                    tracing::warn!(to = %address, "sending a mail failed: {}", smtp_words(&error));
                    report.error = Some(format!("mailing {address}: {error}"));
                    break;
                }
            }
        }
        report
    }

    fn body(
        &self,
        row: &GateMail,
        redactor: &redact::Redactor,
        link: &str,
        reminder: u32,
    ) -> String {
        let again = if reminder == 0 {
            String::new()
        } else {
            format!(
                "This is reminder {reminder} of at most {}: the step still waits.\n\n",
                spec::MAX_REMINDERS
            )
        };
        format!(
            "{again}The workflow \"{workflow}\" waits for a person's decision before its step \
             \"{step}\".\n\nWhat the step does:\n{explain}\n\nOpen the step to see what it \
             will receive and decide (you sign in first; opening the link decides \
             nothing):\n{link}\n\nThe link works until the step is decided or the server's \
             approve-link key is rotated.\n\n-- stepward at {base}\n",
            workflow = content(row, redactor, "workflow", MAX_NAME_CHARS),
            step = content(row, redactor, "step", MAX_NAME_CHARS),
            explain = content(row, redactor, "explain", MAX_EXPLAIN_CHARS),
            base = self.link_base,
        )
    }
}

/// What one try of a row's mail did.
#[derive(Default)]
struct SendReport {
    /// The addresses that got it.
    delivered: Vec<String>,
    /// Addresses the server refused for good, each with why.
    refused: Vec<String>,
    /// Why the try stopped, when it did.
    error: Option<String>,
}

enum Waiting {
    Yes(GateRef),
    NotYet,
    No,
}

enum Settled {
    Sent,
    Failed,
    Closed,
    Later,
}

/// A text of the row's content, scrubbed with the account's values as they are now and then
/// cut at `most` characters (scrubbed first, so no cut leaves half a value), on one line when
/// it is a name.
fn content(row: &GateMail, redactor: &redact::Redactor, key: &str, most: usize) -> String {
    let text = row.content[key].as_str().unwrap_or_default();
    let scrubbed = redactor.scrub(text).get().clone();
    let one_line = most <= MAX_NAME_CHARS;
    scrubbed
        .chars()
        .filter(|character| !(one_line && character.is_control()))
        .take(most)
        .collect()
}

fn subject(row: &GateMail, redactor: &redact::Redactor, reminder: u32) -> String {
    let again = if reminder == 0 { "" } else { "Reminder: " };
    format!(
        "{again}{} waits for your decision at {}",
        content(row, redactor, "workflow", 100),
        content(row, redactor, "step", 100)
    )
}

/// Who is mailed: the account's people whose role decides and who have signed in (set their
/// password) at least once, narrowed to `notify:`, at most [`MAX_RECIPIENTS`]; and why each
/// named or capped person was left out.
fn recipients(
    shared: &Shared,
    row: &GateMail,
) -> Result<(Vec<Mailbox>, Vec<String>), crate::Error> {
    let people = shared
        .store
        .people(&row.account)
        .map_err(crate::Error::storage("read the people a mail goes to"))?;
    let mut to = Vec::new();
    let mut left_out = Vec::new();
    let wanted: Vec<&storage::people::PersonRecord> = if row.people.is_empty() {
        people
            .iter()
            .filter(|person| person.role.decides_gates() && person.password_hash.is_some())
            .collect()
    } else {
        let mut wanted = Vec::new();
        for named in &row.people {
            match people
                .iter()
                .find(|person| person.email.to_lowercase() == *named)
            {
                Some(person) if !person.role.decides_gates() => {
                    left_out.push(format!("not mailed: {named} (no longer may decide)"))
                }
                Some(person) if person.password_hash.is_none() => {
                    left_out.push(format!("not mailed: {named} (has not signed in yet)"))
                }
                Some(person) => wanted.push(person),
                None => left_out.push(format!(
                    "not mailed: {named} (no longer a person of the account)"
                )),
            }
        }
        wanted
    };
    for person in wanted {
        if to.len() >= MAX_RECIPIENTS {
            left_out.push(format!(
                "not mailed: {} (a gate is mailed to at most {MAX_RECIPIENTS} people)",
                person.email
            ));
            continue;
        }
        // A name goes into a header: no control character reaches it.
        let name: String = person
            .display_name
            .chars()
            .filter(|character| !character.is_control())
            .take(MAX_NAME_CHARS)
            .collect();
        match person.email.parse() {
            Ok(email) => to.push(Mailbox::new(Some(name), email)),
            Err(_) => left_out.push(format!(
                "not mailed: {} (not an address a mail server takes)",
                person.email
            )),
        }
    }
    Ok((to, left_out))
}

/// What the run page says of its mail, one sentence per row (gate and attempt), its texts
/// passed through `scrub`.
pub(crate) fn run_page_lines(rows: &[GateMail], scrub: &dyn Fn(&str) -> String) -> Vec<String> {
    use storage::mail::GateMailStatus;
    let when = |at: Option<Timestamp>| at.map_or_else(String::new, |at| crate::html::when(at.0));
    rows.iter()
        .map(|row| {
            let which = format!("The approve link of {} (attempt {})", row.step, row.attempt);
            let sent = (row.mails_sent > 0).then(|| {
                format!(
                    "was mailed {} time{} to {}, last {}",
                    row.mails_sent,
                    if row.mails_sent == 1 { "" } else { "s" },
                    row.last_recipients.join(", "),
                    when(row.last_sent_at)
                )
            });
            let error = row.last_error.as_deref().unwrap_or("no reason recorded");
            let mut line = match (row.status, sent) {
                (GateMailStatus::Due, sent) if row.tries > 0 => format!(
                    "{which} {}could not be mailed ({} tr{}): {error}; trying again {}",
                    sent.map(|sent| format!("{sent}; then it "))
                        .unwrap_or_default(),
                    row.tries,
                    if row.tries == 1 { "y" } else { "ies" },
                    when(row.due_at)
                ),
                (GateMailStatus::Due, Some(sent)) => format!(
                    "{which} {sent}; a reminder follows {} if the step still waits",
                    when(row.due_at)
                ),
                (GateMailStatus::Due, None) => {
                    format!("{which} waits to be mailed: a server started with --smtp sends it")
                }
                (GateMailStatus::Done, sent) => {
                    format!(
                        "{which} {}",
                        sent.unwrap_or_else(|| "was mailed".to_owned())
                    )
                }
                (GateMailStatus::GaveUp, sent) => format!(
                    "{which} {}gave up after {} tr{}: {error}",
                    sent.map_or_else(
                        || "was not mailed: ".to_owned(),
                        |sent| format!("{sent}; then the next mail ")
                    ),
                    row.tries,
                    if row.tries == 1 { "y" } else { "ies" }
                ),
                (GateMailStatus::Closed, Some(sent)) => {
                    format!("{which} {sent}; no more reminders: the step no longer waits")
                }
                (GateMailStatus::Closed, None) => {
                    format!("{which} was not mailed: the step no longer waited when it was due")
                }
            };
            if let Some(note) = &row.note {
                line.push_str(&format!(" ({note})"));
            }
            line.push('.');
            scrub(&line)
        })
        .collect()
}

/// What went wrong with SMTP, in words: lettre's message and its cause.
fn smtp_words(error: &lettre::transport::smtp::Error) -> String {
    let mut words = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        words.push_str(": ");
        words.push_str(&cause.to_string());
        source = cause.source();
    }
    words
}

fn backoff(tries: u32) -> Duration {
    let doublings = tries.saturating_sub(1).min(16);
    FIRST_BACKOFF
        .saturating_mul(1 << doublings)
        .min(MAX_BACKOFF)
}

fn later(at: Timestamp, after: Duration) -> Timestamp {
    Timestamp(at.0.saturating_add(i64::try_from(after.as_millis()).unwrap_or(i64::MAX)))
}

impl Shared {
    fn approve_link_path_of(&self, gate: &GateRef) -> Result<String, crate::Error> {
        crate::handlers::approve::link_path(self, gate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_thirty_seconds_up_to_an_hour() {
        assert_eq!(backoff(1), Duration::from_secs(30));
        assert_eq!(backoff(2), Duration::from_secs(60));
        assert_eq!(backoff(8), Duration::from_secs(3600));
        assert_eq!(backoff(40), Duration::from_secs(3600));
    }

    #[test]
    fn settings_refuse_a_password_in_the_url_and_plain_mail_beyond_loopback() {
        let parse =
            |url: &str, plain| SmtpSettings::parse(url, "stepward@example.com", None, None, plain);
        assert!(matches!(
            parse("smtp://u:secret@mail.example.com", false),
            Err(MailSetupError::PasswordInUrl { url }) if !url.contains("secret")
        ));
        assert!(matches!(
            parse("smtp://mail.example.com:25", true),
            Err(MailSetupError::PlainBeyondLoopback { .. })
        ));
        assert!(matches!(
            parse("smtps://127.0.0.1", true),
            Err(MailSetupError::PlainWithImplicitTls)
        ));
        assert!(matches!(
            parse("http://mail.example.com", false),
            Err(MailSetupError::Url { .. })
        ));
        let starttls = parse("smtp://alerts%40example.com@mail.example.com", false).unwrap();
        assert_eq!(
            (starttls.security, starttls.port, starttls.user.as_deref()),
            (SmtpSecurity::StartTls, 587, Some("alerts@example.com"))
        );
        assert_eq!(parse("smtps://mail.example.com", false).unwrap().port, 465);
        assert_eq!(
            parse("smtp://127.0.0.1:2525", true).unwrap().security,
            SmtpSecurity::PlainLoopback
        );
        assert!(parse("smtp://[::1]:2525", true).is_ok());
        // A name a resolver could answer otherwise is no loopback.
        assert!(matches!(
            parse("smtp://localhost:2525", true),
            Err(MailSetupError::PlainBeyondLoopback { .. })
        ));
        // A URL that does not parse is not echoed: it may hold a password.
        let unparsed = parse("smtp://u:hunter2@mail.example.com:99999", false).unwrap_err();
        assert!(!unparsed.to_string().contains("hunter2"), "{unparsed}");
        assert!(matches!(
            SmtpSettings::parse(
                "smtp://mail.example.com",
                "stepward@example.com",
                Some(Zeroizing::new("secret".to_owned())),
                None,
                false
            ),
            Err(MailSetupError::PasswordWithoutUser)
        ));
        assert!(matches!(
            SmtpSettings::parse(
                "smtp://mail.example.com",
                "not an address",
                None,
                None,
                false
            ),
            Err(MailSetupError::From { .. })
        ));
    }
}
