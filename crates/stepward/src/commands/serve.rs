//! `stepward serve`: the HTTP server over this data directory (the console, the JSON API and its
//! OpenAPI document), and `stepward keys rotate-links`.
//!
//! The serving process takes the engine lock for its whole life: only one process drives the
//! runs of a data directory (recovery would otherwise mark another live process's attempts
//! interrupted). The listener is bound first, so a busy port creates nothing. On first start,
//! when no account has anybody in it, the owner of the local account is invited and the
//! one-time sign-in link is printed on stdout; every later start prints a fresh link (the
//! earlier ones stop working) while that owner has never set a password.
//!
//! With `--tls-cert` and `--tls-key` the server speaks HTTPS itself. Both files are read and
//! checked (PEM, the key file's mode and owner, the key against the certificate) before
//! anything else happens, so a bad file never leaves a first-start invitation behind that
//! nobody saw.

use std::io::Read;
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use auth::TlsMode;
use engine::SystemClock;
use platform::accounts::{NewOwner, OwnerInvitation};
use platform::workflows::WorkspaceWorkflows;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;
use server::{AppOptions, AppState, Backends};
use storage::people::{PeopleStore, RoleName};
use storage::{AccountStore, AuditLog, NewAuditEntry};

use crate::Outcome;
use crate::app::{App, now};
use crate::cli::ServeArgs;
use crate::commands::accounts;
use crate::config::{Backend, Config};

use crate::server_keys::ServerKeyFiles;

pub fn run(args: &ServeArgs, mut config: Config) -> anyhow::Result<Outcome> {
    // Before anything reaches a model: the platform's own addresses are denied (G11).
    config.deny_platform_addresses(
        args.listen,
        args.public_url.as_ref(),
        &Config::resolve_with_system,
    )?;
    // Checked here rather than by clap, which would also refuse `STEPWARD_BEHIND_TLS=false`.
    if args.behind_tls && args.tls_cert.is_some() {
        bail!(
            "--behind-tls and --tls-cert cannot be used together: --behind-tls says a proxy in \
             front terminates TLS, --tls-cert that this server does; pass one of them"
        );
    }
    let smtp = crate::commands::serve_mail::settings(&args.mail)?;
    let tls_config = match (&args.tls_cert, &args.tls_key) {
        (Some(cert_path), Some(key_path)) => Some(load_tls_files(cert_path, key_path)?),
        (None, None) => None,
        // clap requires each with the other; this is the same refusal should that change.
        _ => bail!("--tls-cert and --tls-key go together: pass both or neither"),
    };
    // The listener is bound before anything is created: a port that is busy stops the start
    // with nothing left behind (no data directory, no invitation nobody saw).
    let std_listener = std::net::TcpListener::bind(args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    std_listener
        .set_nonblocking(true)
        .context("cannot make the listening socket non-blocking")?;
    let address = std_listener
        .local_addr()
        .context("cannot read the listening address")?;
    let app = App::open(config)?;
    if app.config.backend == Backend::Unisolated {
        let accounts = app.store.accounts().context("cannot list the accounts")?;
        sandbox::unisolated::unisolated_allowed(accounts.len())
            .context("the unisolated backend is refused")?;
    }
    let key_files = ServerKeyFiles::for_install(app.vault.install_id(), &app.config.data_dir)?;
    let keys = key_files.load_or_create()?;
    // Held until this function returns, after the server stopped.
    let workers = crate::commands::worker::slots(args.workers)?;
    let (engine, engine_lock) = app.serving_engine(workers.sandbox > 0)?;
    let engine = Arc::new(engine);
    let tls_mode = if args.behind_tls || tls_config.is_some() {
        TlsMode::Tls
    } else {
        TlsMode::PlainHttp
    };
    let link_base = match &args.public_url {
        Some(url) => url.as_str().trim_end_matches('/').to_owned(),
        None => base_url(address, tls_mode),
    };
    // A command refused beside this server (a decision, a stop) names it and its address;
    // the lock holds without the name.
    if let Some(Err(error)) = engine_lock
        .as_ref()
        .map(|lock| lock.name_server(&link_base))
    {
        errln!("warning: {error:#}");
    }
    // What `accounts create` and `accounts invite-owner` print their links with.
    let recorded = app.config.server_url_path();
    std::fs::write(&recorded, format!("{link_base}\n"))
        .with_context(|| format!("cannot write {}", recorded.display()))?;
    let invitation = owner_invitation(&app, &args.owner_email)?;
    let tls = tls_mode;
    if tls == TlsMode::PlainHttp && !args.listen.ip().is_loopback() {
        errln!(
            "warning: serving plain HTTP on {}, beyond this machine: passwords and session \
             cookies cross the network unencrypted; pass --tls-cert and --tls-key, or put a \
             TLS-terminating proxy in front and pass --behind-tls",
            args.listen
        );
    }
    let workflows_root = app.config.accounts_dir();
    std::fs::create_dir_all(&workflows_root)
        .with_context(|| format!("cannot create {}", workflows_root.display()))?;
    let state = AppState::new(
        AppOptions {
            trusted_proxy: args.trusted_proxy,
            ..AppOptions::new(
                tls,
                if app.config.backend == Backend::Unisolated {
                    server::StepIsolation::NotIsolated
                } else {
                    server::StepIsolation::Sandboxed
                },
            )
        },
        Backends {
            store: app.store.clone(),
            engine: engine.clone(),
            vault: Some(app.vault.clone()),
            workflows: Some(Arc::new(WorkspaceWorkflows::new(app.workspaces()))),
            clock: Arc::new(SystemClock),
            models: Some(app.config.model_client()?),
        },
        keys,
    );
    state.set_authoring_lints(Arc::new(worker::authoring::PythonLints));
    state.set_public_base(&link_base);
    let mailer = match &smtp {
        Some(settings) => {
            if args.public_url.is_none() {
                errln!(
                    "warning: --smtp without --public-url: mailed links start with {link_base}, \
                     which only this machine may reach; pass --public-url with the address \
                     people open"
                );
            }
            Some(server::mail::Mailer::new(settings, &link_base)?)
        }
        None => None,
    };
    // A workspace write the last process stopped between its commit and its outcome entry
    // got its outcome from the revision log when the data was opened (issue 11, finding 4;
    // issue 37); a server takes no request until that is done, so it tries again here and
    // refuses to start when it cannot.
    let recovered = app
        .reading_engine()
        .recover_workspace_writes()
        .context("cannot recover the outcome of interrupted workspace writes")?;
    crate::app::say_writes_recovered(&recovered);
    // Every account's set is built now, so the logs scrub every account's values from the
    // first line on (the app's registration holds every set the process builds).
    for account in app.store.accounts().context("cannot list the accounts")? {
        app.scrub_sets
            .for_account(&account.id)
            .with_context(|| format!("cannot read the values of account {}", account.id))?;
    }
    // The server logs an error's details (never sent to clients) through `tracing`; they go
    // to stderr, scrubbed of every account's values (G16), at the level `RUST_LOG` asks for
    // (by default warnings and errors, and one line per request: method, route, status, time
    // and request id).
    let _ = tracing_subscriber::fmt()
        .with_writer(redact::ScrubbingWriter::new(
            app.config.scrub_registry.clone(),
            std::io::stderr,
        ))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,server::layers=info")),
        )
        .try_init();
    // Each connection is a file descriptor: the cap on connections is half the soft limit, so
    // the soft limit goes as high as the hard one allows.
    if let Err(error) = server::raise_open_file_limit() {
        errln!("warning: cannot raise the open-file limit to its hard limit: {error}");
    }
    let mut limits = server::ListenerLimits::for_open_file_limit();
    if args.behind_tls || args.trusted_proxy.is_some() {
        // Every connection comes from the proxy's address: a cap per address would cap the
        // whole server; the proxy in front limits its clients.
        limits.max_connections_per_address = limits.max_connections;
        limits.max_handshakes_per_address = limits.max_pending_handshakes;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // A log line never waits on the database, so it scrubs with the sets as last built; this
    // keeps them current when another process changes the vault and nothing here writes.
    let scrub_sets = app.scrub_sets.clone();
    runtime.spawn(async move {
        let mut tick = tokio::time::interval(SCRUB_SET_REFRESH);
        loop {
            tick.tick().await;
            let sets = scrub_sets.clone();
            // A failed refresh keeps the last sets; the next tick tries again.
            let _ = tokio::task::spawn_blocking(move || sets.refresh_all()).await;
        }
    });
    // Approve links by mail: the outbox is drained while the server serves (issue 41).
    match (mailer, &smtp) {
        (Some(mailer), Some(settings)) => {
            errln!("mail: approve links go through {}", settings.describe());
            runtime.spawn(mailer.run(state.clone(), std::future::pending()));
        }
        _ => errln!(
            "mail: off (no --smtp): approve links wait in the outbox for a server started with \
             --smtp"
        ),
    }
    // The in-process worker runs the queued steps; stopped after the server, it finishes the
    // steps it runs and gives back the ones it has not started.
    let worker = match workers.sandbox {
        0 => None,
        _ => Some(crate::commands::worker::start(
            &app,
            engine.clone(),
            workers,
        )?),
    };
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::from_std(std_listener)
            .context("cannot serve on the listening socket")?;
        let shutdown = shutdown_signal("stepward stopping: finishing requests in flight")?;
        let base_url = base_url(address, tls);
        outln!(
            "stepward serves {base_url} (data directory {})",
            app.config.data_dir.display()
        );
        // The exemptions in force, so an operator sees which private or plain-http model
        // endpoints this server reaches (newcomer 3, friction 8).
        let exempt = &app.config.model_endpoints.exempt;
        let from_file = app
            .config
            .operator_file
            .as_ref()
            .map(|file| format!(" (--allow-model-endpoint and {})", file.display()))
            .unwrap_or_default();
        if exempt.is_empty() {
            errln!(
                "model endpoints: public https only (no --allow-model-endpoint, no \
                 allow_model_endpoints in an operator file)"
            );
        } else {
            errln!(
                "model endpoints: public https, and exempted by the operator{from_file}: {}",
                exempt
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        match &invitation {
            Some(StartInvitation::First(invitation)) => {
                outln!(
                    "first start: the owner of account {} ({}) sets a password once, within 72 \
                     hours, at:",
                    app.account.as_str(),
                    args.owner_email
                );
                outln!("{link_base}{}", invitation.sign_in_path);
            }
            Some(StartInvitation::Again { email, invitation }) => {
                outln!(
                    "the owner of account {} ({email}) has not set a password yet: a fresh \
                     one-time link, within 72 hours (every earlier link stopped working):",
                    app.account.as_str()
                );
                outln!("{link_base}{}", invitation.sign_in_path);
            }
            None => {}
        }
        match tls_config {
            Some(tls_config) => {
                server::serve_tls(listener, tls_config, state, shutdown, limits).await
            }
            None => server::serve(listener, state, shutdown, limits).await,
        }
        .context("the server failed")?;
        anyhow::Ok(())
    });
    if let Some(worker) = worker {
        worker.stop();
    }
    served?;
    errln!("stepward stopped");
    Ok(Outcome::Done)
}

/// The link a start of `serve` prints: the first start invites the local account's owner; a
/// later start, while that owner has never set a password, prints a fresh link (so a link
/// lost, expired or never seen locks nobody out).
enum StartInvitation {
    First(OwnerInvitation),
    Again {
        email: String,
        invitation: OwnerInvitation,
    },
}

fn owner_invitation(app: &App, owner_email: &str) -> anyhow::Result<Option<StartInvitation>> {
    if !accounts::anybody_exists(app)? {
        let owner = NewOwner {
            display_name: accounts::display_name_from_email(owner_email),
            email: owner_email.to_owned(),
        };
        return Ok(Some(StartInvitation::First(accounts::invite_local_owner(
            app, &owner,
        )?)));
    }
    let people = app
        .store
        .people(&app.account)
        .context("cannot list the people of the local account")?;
    let waiting = people
        .iter()
        .any(|person| person.role == RoleName::Owner && person.password_hash.is_none());
    if !waiting {
        return Ok(None);
    }
    let (owner, invitation, _ended) = accounts::invite_owner(app, &app.account)?;
    Ok(Some(StartInvitation::Again {
        email: owner.email,
        invitation,
    }))
}

/// `stepward keys rotate-links`: a new approve-link signing key; every link signed with the old
/// one stops working. Refused while a server drives this data directory, because that server
/// keeps verifying with the key it loaded (the lock says so); stop it, rotate, start it again.
pub fn rotate_links(app: &App) -> anyhow::Result<Outcome> {
    let _engine_lock = app.take_engine_lock().context(
        "stop `stepward serve` before rotating the approve-link key: a running server keeps \
         accepting links signed with the key it loaded",
    )?;
    let key_files = ServerKeyFiles::for_install(app.vault.install_id(), &app.config.data_dir)?;
    let key_id = key_files.rotate_approve_link_key()?;
    // The key signs every account's links, so every account's log records the rotation.
    for account in app.store.accounts().context("cannot list the accounts")? {
        let redactor = app
            .scrub_sets
            .for_account(&account.id)
            .context("cannot build the account's redactor for the audit log")?;
        app.store
            .append_audit(&NewAuditEntry {
                account: account.id.clone(),
                run: None,
                actor: redactor.scrub_fields(App::cli_actor()),
                action: storage::AuditAction::KeyRotateLinks,
                detail: redactor.scrub_json(&json!({ "key_id": key_id.to_hex() })),
                at: now(),
            })
            .context("cannot write the audit log")?;
    }
    outln!(
        "new approve-link key {} in {}: every earlier approve link stopped working",
        key_id.to_hex(),
        key_files.approve_link_key_path().display()
    );
    Ok(Outcome::Done)
}

/// The server's TLS configuration from `--tls-cert` and `--tls-key`. Every refusal names the
/// file and what is wrong with it.
fn load_tls_files(cert_path: &Path, key_path: &Path) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let cert_chain = read_certificate_chain(cert_path)?;
    let key = read_private_key(key_path)?;
    server::tls_server_config(cert_chain, key).map_err(|error| match error {
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => anyhow!(
            "the TLS key {} does not belong to the certificate in {}: give the key the \
             certificate was issued for",
            key_path.display(),
            cert_path.display()
        ),
        rustls::Error::InconsistentKeys(_) => anyhow!(
            "cannot check that the TLS key {} belongs to the certificate in {}: use an RSA, \
             ECDSA or Ed25519 key",
            key_path.display(),
            cert_path.display()
        ),
        rustls::Error::InvalidCertificate(problem) => anyhow!(
            "the TLS certificate file {} holds a certificate that cannot be parsed ({problem:?})",
            cert_path.display()
        ),
        other => anyhow!(
            "the TLS key {} cannot be used with the certificate in {}: {other}",
            key_path.display(),
            cert_path.display()
        ),
    })
}

/// Every certificate of a PEM file, the server's own first.
fn read_certificate_chain(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let text = std::fs::read(path)
        .with_context(|| format!("cannot read the TLS certificate file {}", path.display()))?;
    let chain = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| {
            anyhow!(
                "the TLS certificate file {} is not valid PEM: {}",
                path.display(),
                pem_problem(&error)
            )
        })?;
    if chain.is_empty() {
        bail!(
            "the TLS certificate file {} holds no certificate (a PEM block `BEGIN CERTIFICATE`)",
            path.display()
        );
    }
    Ok(chain)
}

/// The first private key of a PEM file that only its owner may read, as the vault's root key
/// and the server's own key files are kept, and whose owner is the user this process runs as.
/// The file is opened once; its type, mode and owner are those of the open file, and the key
/// is read from it, so the file cannot be swapped between the checks and the read.
fn read_private_key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    let text = read_owner_only_file(path, "TLS key file", "the PEM key file", "the key")?;
    PrivateKeyDer::from_pem_slice(&text).map_err(|error| match error {
        pem::Error::NoItemsFound => anyhow!(
            "the TLS key file {} holds no private key (a PEM block `BEGIN PRIVATE KEY`, \
             `BEGIN RSA PRIVATE KEY` or `BEGIN EC PRIVATE KEY`)",
            path.display()
        ),
        other => anyhow!(
            "the TLS key file {} is not valid PEM: {}",
            path.display(),
            pem_problem(&other)
        ),
    })
}

/// The bytes of a file only this process's user may read and change (`what`: "TLS key file";
/// `expected`: what a regular file there should be; `held`: what to replace if it leaked).
/// The file is opened once; its type, mode and owner are those of the open file, and the
/// bytes are read from it, so the file cannot be swapped between the checks and the read.
pub(crate) fn read_owner_only_file(
    path: &Path,
    what: &str,
    expected: &str,
    held: &str,
) -> anyhow::Result<zeroize::Zeroizing<Vec<u8>>> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        // A FIFO in the file's place would otherwise block the open until somebody writes.
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed())
        .open(path)
        .with_context(|| format!("cannot read the {what} {}", path.display()))?;
    let metadata = file
        .metadata()
        .with_context(|| format!("cannot read the {what} {}", path.display()))?;
    if !metadata.file_type().is_file() {
        bail!(
            "the {what} {} is not a regular file: give the path of {expected}",
            path.display()
        );
    }
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        bail!(
            "the {what} {} has mode {mode:o}: its group or others may read it; run \
             `chmod 600 {}` (and replace {held} if somebody else may have read it)",
            path.display(),
            path.display()
        );
    }
    let this_user = rustix::process::geteuid().as_raw();
    if metadata.uid() != this_user {
        bail!(
            "the {what} {} belongs to uid {}, not to uid {this_user} that the server runs \
             as: whoever owns it may change or swap it; run `chown {this_user} {}`",
            path.display(),
            metadata.uid(),
            path.display()
        );
    }
    let mut bytes = zeroize::Zeroizing::new(Vec::new());
    file.read_to_end(&mut bytes)
        .with_context(|| format!("cannot read the {what} {}", path.display()))?;
    Ok(bytes)
}

/// What is wrong with a PEM file, without echoing its bytes (a key file's line may hold key
/// material).
fn pem_problem(error: &pem::Error) -> &'static str {
    match error {
        pem::Error::MissingSectionEnd { .. } => "a block has no END line",
        pem::Error::IllegalSectionStart { .. } => "a BEGIN line is malformed",
        pem::Error::Base64Decode(_) => "a block is not valid base64",
        pem::Error::Io(_) => "it cannot be read",
        pem::Error::NoItemsFound => "it holds no block of the expected kind",
        pem::Error::SectionTooLarge => "a block is too large",
        _ => "it cannot be parsed",
    }
}

fn base_url(address: SocketAddr, tls: TlsMode) -> String {
    let scheme = match tls {
        TlsMode::Tls => "https",
        TlsMode::PlainHttp => "http",
    };
    format!("{scheme}://{address}")
}

/// Resolves on the first SIGINT or SIGTERM, which starts the graceful shutdown (the server
/// drains for at most its shutdown deadline; a worker finishes the steps it runs), saying
/// `stopping` (what the process finishes). A second SIGINT or SIGTERM after that ends the
/// process at once, whatever is still open, while the runtime that awaited this lives. The
/// handlers are installed before this returns, so a signal that arrives once the process
/// serves or works is never missed.
pub(crate) fn shutdown_signal(
    stopping: &'static str,
) -> anyhow::Result<impl Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        errln!("{stopping} (a second SIGINT or SIGTERM stops at once)");
        tokio::spawn(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            errln!("stepward stopped at once: a second signal");
            std::process::exit(SECOND_SIGNAL_EXIT_CODE);
        });
    })
}

/// The exit status after a second SIGINT or SIGTERM: not 0, since requests were cut off.
const SECOND_SIGNAL_EXIT_CODE: i32 = 130;

/// How often the server checks every account's vault generation for its logs' scrub sets.
const SCRUB_SET_REFRESH: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    use crate::commands::serve::load_tls_files;

    /// A self-signed certificate for `localhost` and its key, as PEM.
    fn self_signed() -> (String, String) {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        (certified.cert.pem(), certified.signing_key.serialize_pem())
    }

    fn write(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    /// Each bad pair of files is refused with a message naming the file at fault and what is
    /// wrong with it; the good pair loads.
    #[test]
    fn tls_files_are_refused_with_the_file_and_the_problem_named() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed();
        let (_other_cert, other_key) = self_signed();
        let good_cert = write(dir.path(), "cert.pem", &cert, 0o644);
        let good_key = write(dir.path(), "key.pem", &key, 0o600);
        assert!(load_tls_files(&good_cert, &good_key).is_ok());

        let missing = dir.path().join("missing.pem");
        let garbage_cert = write(
            dir.path(),
            "garbage-cert.pem",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            0o644,
        );
        let broken_pem = write(
            dir.path(),
            "broken.pem",
            "-----BEGIN CERTIFICATE-----\nMIIB\n",
            0o644,
        );
        let open_key = write(dir.path(), "open-key.pem", &key, 0o640);
        let wrong_key = write(dir.path(), "wrong-key.pem", &other_key, 0o600);
        let cert_as_key = write(dir.path(), "cert-as-key.pem", &cert, 0o600);
        let cases: [(&Path, &Path, &Path, &str); 7] = [
            (
                &missing,
                &good_key,
                &missing,
                "cannot read the TLS certificate file",
            ),
            (
                &good_cert,
                &missing,
                &missing,
                "cannot read the TLS key file",
            ),
            (&good_key, &good_key, &good_key, "holds no certificate"),
            (&broken_pem, &good_key, &broken_pem, "is not valid PEM"),
            (&garbage_cert, &good_key, &garbage_cert, "cannot be parsed"),
            (&good_cert, &open_key, &open_key, "chmod 600"),
            (
                &good_cert,
                &cert_as_key,
                &cert_as_key,
                "holds no private key",
            ),
        ];
        for (cert_path, key_path, named, problem) in cases {
            let error = format!("{:#}", load_tls_files(cert_path, key_path).unwrap_err());
            assert!(
                error.contains(&named.display().to_string()) && error.contains(problem),
                "{cert_path:?} {key_path:?}: {error}"
            );
        }
        let mismatch = format!("{:#}", load_tls_files(&good_cert, &wrong_key).unwrap_err());
        assert!(
            mismatch.contains(&format!(
                "the TLS key {} does not belong to the certificate in {}",
                wrong_key.display(),
                good_cert.display()
            )),
            "{mismatch}"
        );
        assert!(!mismatch.contains("PRIVATE KEY"), "{mismatch}");
    }

    /// A key file that belongs to another user is refused even with mode 0600: whoever owns it
    /// may change it. Root makes the file another user's (CI runs as root).
    #[test]
    fn tls_key_file_of_another_owner_is_refused_needs_root() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed();
        let cert_path = write(dir.path(), "cert.pem", &cert, 0o644);
        let key_path = write(dir.path(), "key.pem", &key, 0o600);
        assert!(load_tls_files(&cert_path, &key_path).is_ok());
        let this_user = rustix::process::geteuid().as_raw();
        // nobody's uid under root; unprivileged, the chown below fails and says root is needed.
        let other_user = if this_user == 0 { 65534 } else { 0 };
        std::os::unix::fs::chown(&key_path, Some(other_user), None)
            .expect("making the key another user's needs root");
        let error = format!("{:#}", load_tls_files(&cert_path, &key_path).unwrap_err());
        assert!(
            error.contains(&key_path.display().to_string())
                && error.contains(&format!(
                    "belongs to uid {other_user}, not to uid {this_user}"
                )),
            "{error}"
        );
    }

    /// What is not a regular file in the key's place (a directory, a FIFO nobody writes to)
    /// is refused at once, without blocking on the open.
    #[test]
    fn tls_key_path_that_is_not_a_regular_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, _key) = self_signed();
        let cert_path = write(dir.path(), "cert.pem", &cert, 0o644);
        let directory = dir.path().join("key-dir");
        std::fs::create_dir(&directory).unwrap();
        std::fs::set_permissions(&directory, std::fs::Permissions::from_mode(0o700)).unwrap();
        let fifo = dir.path().join("key-fifo");
        let made = std::process::Command::new("mkfifo")
            .arg("-m")
            .arg("600")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        for key_path in [directory, fifo] {
            // On another thread, so an open that blocks fails the test instead of hanging it.
            let (sender, answer) = std::sync::mpsc::channel();
            let (cert_path, key_path_there) = (cert_path.clone(), key_path.clone());
            std::thread::spawn(move || {
                let _ = sender.send(load_tls_files(&cert_path, &key_path_there).map(|_| ()));
            });
            let loaded = answer
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("loading the key file did not block");
            let error = format!("{:#}", loaded.unwrap_err());
            assert!(
                error.contains(&key_path.display().to_string())
                    && error.contains("is not a regular file"),
                "{error}"
            );
        }
    }
}
