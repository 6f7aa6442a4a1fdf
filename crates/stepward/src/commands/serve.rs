//! `stepward serve`: the HTTP server over this data directory (the console, the JSON API and its
//! OpenAPI document), and `stepward keys rotate-links`.
//!
//! The serving process takes the engine lock for its whole life: only one process drives the
//! runs of a data directory (recovery would otherwise mark another live process's attempts
//! interrupted). On first start, when no account has anybody in it, the owner of the local
//! account is invited and the one-time sign-in link is printed on stdout.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use auth::TlsMode;
use engine::SystemClock;
use serde_json::json;
use server::{AppOptions, AppState, Backends, NewOwner, WorkflowDirectories};
use storage::{AccountStore, AuditLog, NewAuditEntry};

use crate::Outcome;
use crate::app::{App, now};
use crate::cli::ServeArgs;
use crate::commands::accounts;
use crate::config::{Backend, Config};

use crate::server_keys::ServerKeyFiles;

pub fn run(args: &ServeArgs, config: Config) -> anyhow::Result<Outcome> {
    let app = App::open(config)?;
    if app.config.backend == Backend::Unisolated {
        let accounts = app.store.accounts().context("cannot list the accounts")?;
        sandbox::unisolated::unisolated_allowed(accounts.len())
            .context("the unisolated backend is refused")?;
    }
    let key_files = ServerKeyFiles::for_install(app.vault.install_id(), &app.config.data_dir)?;
    let keys = key_files.load_or_create()?;
    // Held until this function returns, after the server stopped.
    let (engine, _engine_lock) = app.engine()?;
    let invitation = if accounts::anybody_exists(&app)? {
        None
    } else {
        let owner = NewOwner {
            display_name: accounts::display_name_from_email(&args.owner_email),
            email: args.owner_email.clone(),
        };
        Some(accounts::invite_local_owner(&app, &owner)?)
    };
    let tls = if args.behind_tls {
        TlsMode::Tls
    } else {
        TlsMode::PlainHttp
    };
    if tls == TlsMode::PlainHttp && !args.listen.ip().is_loopback() {
        eprintln!(
            "warning: serving plain HTTP on {}, beyond this machine: passwords and session \
             cookies cross the network unencrypted; put a TLS-terminating proxy in front and \
             pass --behind-tls",
            args.listen
        );
    }
    let workflows_root = accounts::accounts_dir(&app.config.data_dir);
    std::fs::create_dir_all(&workflows_root)
        .with_context(|| format!("cannot create {}", workflows_root.display()))?;
    let state = AppState::new(
        AppOptions::new(tls),
        Backends {
            store: app.store.clone(),
            engine: Arc::new(engine),
            secrets: app.vault.clone(),
            vault: Some(app.vault.clone()),
            workflows: Some(Arc::new(WorkflowDirectories::new(workflows_root))),
            clock: Arc::new(SystemClock),
        },
        keys,
    );
    // The server logs an error's details (never sent to clients) through `tracing`; they go
    // to stderr, at the level `RUST_LOG` asks for (warnings and errors by default).
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let address = listener
            .local_addr()
            .context("cannot read the listening address")?;
        let shutdown = shutdown_signal()?;
        let base_url = base_url(address, tls);
        println!("stepward serves {base_url} (data directory {})", app.config.data_dir.display());
        if let Some(invitation) = &invitation {
            println!(
                "first start: the owner of account {} ({}) sets a password once, within 72 hours, at:",
                app.account.0, args.owner_email
            );
            println!("{base_url}{}", invitation.sign_in_path);
        }
        server::serve(listener, state, shutdown)
            .await
            .context("the server failed")?;
        eprintln!("stepward stopped: requests in flight finished");
        anyhow::Ok(())
    })?;
    Ok(Outcome::Done)
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
        let redactor = redact::Redactor::for_account(&account.id.0, app.vault.as_ref())
            .context("cannot build the account's redactor for the audit log")?;
        app.store
            .append_audit(&NewAuditEntry {
                account: account.id.clone(),
                run: None,
                actor: App::cli_actor(),
                action: "key.rotate_links".to_owned(),
                detail: redactor.scrub_json(&json!({ "key_id": key_id.to_hex() })),
                at: now(),
            })
            .context("cannot write the audit log")?;
    }
    println!(
        "new approve-link key {} in {}: every earlier approve link stopped working",
        key_id.to_hex(),
        key_files.approve_link_key_path().display()
    );
    Ok(Outcome::Done)
}

fn base_url(address: SocketAddr, tls: TlsMode) -> String {
    let scheme = match tls {
        TlsMode::Tls => "https",
        TlsMode::PlainHttp => "http",
    };
    format!("{scheme}://{address}")
}

/// Resolves on the first SIGINT or SIGTERM. The handlers are installed before this returns, so
/// a signal that arrives once the server is listening is never missed.
fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}
