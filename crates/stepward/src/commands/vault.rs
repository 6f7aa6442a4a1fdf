//! `stepward secrets ...`, `stepward connections ...`, `stepward keys rotate-root`.
//!
//! Values are read from stdin, never from an argument (arguments end up in shell history and
//! in `ps`); listings show names, versions and dates, never values (G19). Every write is in the
//! audit log, by name only, appended in the write's own transaction: a write whose entry
//! cannot be written is refused and changes nothing (issue 11, finding 4).

use anyhow::{Context, bail};
use serde_json::json;
use storage::vault::ItemSummary;

use crate::Outcome;
use crate::app::App;
use crate::cli::{ConnectionsCommand, KeysCommand, SecretsCommand};
use crate::commands::print_json;
use crate::config::Config;

pub fn secrets(command: &SecretsCommand, config: Config) -> anyhow::Result<Outcome> {
    // Only `set` makes an installation; the others read or change one.
    let app = match command {
        SecretsCommand::Set { .. } => App::open(config)?,
        _ => App::open_installed(config)?,
    };
    let account = app.account.clone();
    match command {
        SecretsCommand::Set { name } => {
            let mut values = crate::secret_input::read_values(&[format!("secret {name}")])?;
            let value = values.pop().context("no value was given on stdin")?;
            let redactor = app.audit_redactor()?;
            let audit = |item: &ItemSummary| {
                app.audit_entry(
                    &redactor,
                    storage::AuditAction::VaultSecretSet,
                    &json!({ "name": item.name, "version": item.version }),
                )
            };
            let info = app
                .vault
                .secrets()
                .set_audited(&account, name, value, &audit)?;
            errln!("secret {} set (version {})", info.name, info.version);
        }
        SecretsCommand::List { json } => {
            let secrets = app.vault.secrets().list(&account)?;
            if *json {
                print_json(
                    &secrets
                        .iter()
                        .map(|info| {
                            json!({
                                "name": info.name,
                                "version": info.version,
                                "created_at": info.created_at.0,
                                "updated_at": info.updated_at.0,
                            })
                        })
                        .collect::<Vec<_>>(),
                )?;
            } else if secrets.is_empty() {
                outln!("no secrets; set one with `stepward secrets set NAME` (value on stdin)");
            } else {
                for info in &secrets {
                    outln!("{}  version {}", info.name, info.version);
                }
            }
        }
        SecretsCommand::Rm { name } => {
            let redactor = app.audit_redactor()?;
            let audit = app.audit_entry(
                &redactor,
                storage::AuditAction::VaultSecretRemove,
                &json!({ "name": name }),
            );
            app.vault.secrets().remove_audited(&account, name, &audit)?;
            errln!("secret {name} removed");
        }
    }
    Ok(Outcome::Done)
}

pub fn connections(command: &ConnectionsCommand, config: Config) -> anyhow::Result<Outcome> {
    // Only `add` makes an installation; the others read or change one.
    let app = match command {
        ConnectionsCommand::Add { .. } => App::open(config)?,
        _ => App::open_installed(config)?,
    };
    let account = app.account.clone();
    match command {
        ConnectionsCommand::Add { alias, fields } => {
            let labels: Vec<String> = fields
                .iter()
                .map(|field| format!("{alias}.{field}"))
                .collect();
            let values = crate::secret_input::read_values(&labels)?;
            let pairs = fields.iter().cloned().zip(values).collect();
            let redactor = app.audit_redactor()?;
            let audit = |item: &ItemSummary| {
                app.audit_entry(
                    &redactor,
                    storage::AuditAction::VaultConnectionSet,
                    &json!({ "alias": item.name, "fields": item.fields, "version": item.version }),
                )
            };
            let info = app
                .vault
                .connections()
                .add_audited(&account, alias, pairs, &audit)?;
            errln!(
                "connection {} set with field(s) {} (version {}); a step that declares \
                 `connections: [{}]` receives {}",
                info.alias,
                info.fields.join(", "),
                info.version,
                info.alias,
                info.fields
                    .iter()
                    .map(|field| spec::connection_env_name(&info.alias, field))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        ConnectionsCommand::List { json } => {
            let connections = app.vault.connections().list(&account)?;
            if *json {
                print_json(
                    &connections
                        .iter()
                        .map(|info| {
                            json!({
                                "alias": info.alias,
                                "fields": info.fields,
                                "version": info.version,
                                "revoked": info.revoked_at.is_some(),
                            })
                        })
                        .collect::<Vec<_>>(),
                )?;
            } else if connections.is_empty() {
                outln!("no connections; add one with `stepward connections add ALIAS --field F`");
            } else {
                for info in &connections {
                    let revoked = if info.revoked_at.is_some() {
                        "  (revoked)"
                    } else {
                        ""
                    };
                    outln!(
                        "{}  fields: {}{revoked}",
                        info.alias,
                        info.fields.join(", ")
                    );
                }
            }
        }
        ConnectionsCommand::Rm { alias } => {
            let redactor = app.audit_redactor()?;
            let audit = app.audit_entry(
                &redactor,
                storage::AuditAction::VaultConnectionRemove,
                &json!({ "alias": alias }),
            );
            app.vault
                .connections()
                .remove_audited(&account, alias, &audit)?;
            errln!("connection {alias} removed");
        }
    }
    Ok(Outcome::Done)
}

pub fn keys(command: &KeysCommand, config: Config) -> anyhow::Result<Outcome> {
    let app = App::open_installed(config)?;
    match command {
        KeysCommand::RotateRoot {
            new_root_key_file,
            generate,
        } => {
            // A rotation that died half-way is finished first, under the root key it made.
            let pending = app
                .vault
                .pending_account_rotations()
                .context("cannot read the vault's pending rotations")?;
            if !pending.is_empty() {
                let rotated = app
                    .vault
                    .finish_account_rotations()
                    .context("cannot finish the root key's rotation")?;
                app.audit(
                    storage::AuditAction::KeyRotateRootFinished,
                    json!({ "accounts": rotated }),
                )?;
                errln!(
                    "Finished the rotation of the root key begun earlier: the data keys of {} \
                     account(s) were rotated and their values re-encrypted. Run the command \
                     again to rotate the root key once more.",
                    rotated.len()
                );
                return Ok(Outcome::Done);
            }
            if let (Some(path), true) = (new_root_key_file, *generate) {
                app.vault
                    .generate_root_key_file(path)
                    .context("cannot write the new root key")?;
                errln!("Wrote a new root key to {} (mode 600).", path.display());
            }
            let source = match new_root_key_file {
                Some(path) => vault::RootKeySource::File(path.clone()),
                None => vault::RootKeySource::DefaultFile,
            };
            let notice = match app.vault.rotate_root(&source) {
                Ok(notice) => notice,
                Err(vault::Error::NewRootKeyMissing { path }) => bail!(
                    "the new root key file {path} does not exist, so nothing was rotated (the \
                     current key and every secret are as they were): create it holding 64 \
                     hexadecimal characters, for example `openssl rand -hex 32 > {path} && chmod \
                     600 {path}`, or let this command write one there: `stepward keys \
                     rotate-root --new-root-key-file {path} --generate`",
                    path = path.display()
                ),
                Err(error) => return Err(error).context("cannot rotate the root key"),
            };
            app.audit(
                storage::AuditAction::KeyRotateRoot,
                json!({ "location": app.vault.root_key_location() }),
            )?;
            errln!("{notice}");
        }
        KeysCommand::RotateAccount { account } => {
            let redactor = app.audit_redactor()?;
            let audit = |version: u32| {
                app.audit_entry(
                    &redactor,
                    storage::AuditAction::KeyRotateAccount,
                    &json!({ "account": account.as_str(), "key_version": version }),
                )
            };
            let version = app
                .vault
                .rotate_account_key_audited(account, &audit)
                .with_context(|| format!("cannot rotate the data key of account {account}"))?;
            errln!(
                "Rotated the data key of account {account} (now version {version}) and \
                 re-encrypted its values: the old data key opens nothing stored from now on."
            );
        }
        KeysCommand::RotateLinks => return crate::commands::serve::rotate_links(&app),
    }
    Ok(Outcome::Done)
}
