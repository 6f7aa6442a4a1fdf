//! `stepward accounts create`: an operator command on the server's data that creates an account
//! with its owner and prints the owner's one-time sign-in link; `stepward accounts
//! invite-owner`, a new link for an owner who lost theirs (the old ones stop working); and the
//! starts of `stepward serve`, which invite the owner of the local account when nobody exists
//! yet and print a fresh link while that owner has never set a password.
//!
//! The server's accounts keep their workflows and agents in their workspaces
//! (`<data-dir>/accounts/<account id>/workspace/`: `workflows/<name>.yaml`,
//! `agents/<name>/AGENT.md`), read by [`platform::workflows::WorkspaceWorkflows`].

use std::path::Path;

use anyhow::{Context, bail};
use platform::accounts::{NewOwner, OwnerInvitation};
use serde_json::json;
use storage::people::{PeopleStore, PersonRecord, RoleName};
use storage::{Account, AccountId, AccountStore, AuditLog, NewAuditEntry};

use crate::Outcome;
use crate::app::{App, now};
use crate::cli::AccountsCommand;
use crate::config::{Backend, Config};

/// How long an owner's one-time sign-in link works: 72 hours, as the server's invitations.
pub const OWNER_LINK_LIFETIME_MILLIS: i64 = 72 * 60 * 60 * 1000;

pub fn run(command: &AccountsCommand, config: Config) -> anyhow::Result<Outcome> {
    match command {
        AccountsCommand::Create {
            name,
            owner_email,
            owner_name,
            base_url,
        } => {
            let base = LinkBase::choose(base_url.as_deref(), &config)?;
            let app = App::open(config)?;
            let owner = NewOwner {
                display_name: owner_name
                    .clone()
                    .unwrap_or_else(|| display_name_from_email(owner_email)),
                email: owner_email.clone(),
            };
            let invitation = create_account(&app, name, &owner)?;
            outln!("account {name} created with its owner {}", owner.email);
            outln!(
                "the owner sets a password once, within 72 hours, at: {}{}",
                base.url,
                invitation.sign_in_path
            );
            outln!(
                "the password set with it replaces the owner's current one, if they had one; \
                 until it is used, the current password still signs in"
            );
            outln!("{}", base.said);
            Ok(Outcome::Done)
        }
        AccountsCommand::InviteOwner { account, base_url } => {
            let base = LinkBase::choose(base_url.as_deref(), &config)?;
            let app = App::open_installed(config)?;
            let (owner, invitation, ended) = invite_owner(&app, account)?;
            outln!(
                "a new one-time link for {} ({}), the owner of account {account}; {}",
                owner.display_name,
                owner.email,
                match ended {
                    0 => "no earlier link was still open".to_owned(),
                    1 => "the earlier link stopped working".to_owned(),
                    more => format!("the {more} earlier links stopped working"),
                }
            );
            outln!(
                "the owner sets a password once, within 72 hours, at: {}{}",
                base.url,
                invitation.sign_in_path
            );
            outln!(
                "the password set with it replaces the owner's current one, if they had one; \
                 until it is used, the current password still signs in"
            );
            outln!("{}", base.said);
            Ok(Outcome::Done)
        }
    }
}

/// The address a printed sign-in link starts with, and where it came from (said beside the
/// link, so an operator who reads a wrong address knows which setting to change).
pub struct LinkBase {
    pub url: String,
    pub said: String,
}

impl LinkBase {
    /// `--base-url` (or `STEPWARD_PUBLIC_URL`) when given; else the address `stepward serve`
    /// last served this data directory on; else a refusal asking for `--base-url`: a link to
    /// an address nobody serves is a lockout.
    pub fn choose(flag: Option<&str>, config: &Config) -> anyhow::Result<LinkBase> {
        if let Some(url) = flag {
            return Ok(LinkBase {
                url: url.trim().trim_end_matches('/').to_owned(),
                said: "(the address given by --base-url or STEPWARD_PUBLIC_URL)".to_owned(),
            });
        }
        let recorded = config.server_url_path();
        match std::fs::read_to_string(&recorded) {
            Ok(text) if !text.trim().is_empty() => Ok(LinkBase {
                url: text.trim().trim_end_matches('/').to_owned(),
                said: format!(
                    "(the address `stepward serve` last served this data directory on, from {}; \
                     pass --base-url URL for another)",
                    recorded.display()
                ),
            }),
            Ok(_) => bail!(no_base_url(&recorded)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                bail!(no_base_url(&recorded))
            }
            Err(error) => Err(error).with_context(|| format!("cannot read {}", recorded.display())),
        }
    }
}

fn no_base_url(recorded: &Path) -> String {
    format!(
        "cannot tell which address people reach the server at: `stepward serve` has not served \
         this data directory yet ({} does not exist); pass --base-url URL (for example \
         --base-url https://stepward.example.com), the address in the link the owner opens",
        recorded.display()
    )
}

/// A new one-time sign-in link for the owner of `account`; every earlier link of the owner
/// that could still be used stops working in the same transaction. Recorded in the account's
/// audit log as done by the operator. The owner's password, if one was set, keeps working
/// until the link is used to set a new one. Returns the owner, the link and how many earlier
/// links were ended.
pub fn invite_owner(
    app: &App,
    account: &AccountId,
) -> anyhow::Result<(PersonRecord, OwnerInvitation, u64)> {
    let known = app
        .store
        .accounts()
        .context("cannot list the accounts")?
        .into_iter()
        .any(|existing| existing.id == *account);
    if !known {
        bail!(
            "there is no account {} in {}: `stepward accounts create NAME --owner-email E` \
             creates one",
            account.as_str(),
            app.config.data_dir.display()
        );
    }
    let people = app
        .store
        .people(account)
        .with_context(|| format!("cannot list the people of account {}", account.as_str()))?;
    let Some(owner) = people
        .into_iter()
        .find(|person| person.role == RoleName::Owner)
    else {
        bail!(
            "account {} has no owner yet: `stepward serve` invites the local account's owner on \
             its first start",
            account.as_str()
        );
    };
    let created_at = now();
    let (token, link) =
        platform::accounts::new_sign_in_link(&owner.id, created_at, OWNER_LINK_LIFETIME_MILLIS)?;
    let expires_at = link.expires_at;
    let ended = app
        .store
        .replace_sign_in_links(&link)
        .context("cannot store the owner's sign-in link")?;
    let redactor = app
        .scrub_sets
        .for_account(account)
        .context("cannot build the account's redactor for the audit log")?;
    app.store
        .append_audit(&NewAuditEntry {
            account: account.clone(),
            run: None,
            actor: redactor.scrub_fields(App::cli_actor()),
            action: storage::AuditAction::AccountInviteOwner,
            detail: redactor.scrub_json(&json!({
                "account": account.as_str(),
                "owner": owner.id,
                "email": owner.email,
                "earlier_links_ended": ended,
            })),
            at: created_at,
        })
        .context("cannot write the audit log")?;
    let invitation = OwnerInvitation {
        person_id: owner.id.clone(),
        sign_in_path: format!("/welcome/{}", token.reveal_once()),
        expires_at,
    };
    Ok((owner, invitation, ended))
}

/// Creates the account `name` and its owner. Refused with the unisolated backend, which serves
/// one account only (steps there have no isolation from each other's data).
pub fn create_account(app: &App, name: &str, owner: &NewOwner) -> anyhow::Result<OwnerInvitation> {
    let id = check_account_name(name)?;
    check_email(&owner.email)?;
    if app.config.backend == Backend::Unisolated {
        let accounts = app.store.accounts().context("cannot list the accounts")?;
        sandbox::unisolated::unisolated_allowed(accounts.len() + 1)
            .context("a second account is refused")?;
    }
    let account = Account {
        id: id.clone(),
        name: name.to_owned(),
        created_at: now(),
    };
    let invitation = platform::accounts::create_account_with_owner(
        app.store.as_ref(),
        &app.scrub_sets,
        &account,
        owner,
        App::cli_actor(),
        OWNER_LINK_LIFETIME_MILLIS,
    )
    .with_context(|| format!("cannot create the account {name}"))?;
    app.workspaces()
        .for_account(&id)
        .with_context(|| format!("cannot create the workspace of account {name}"))?;
    Ok(invitation)
}

/// Whether any account has a person yet.
pub fn anybody_exists(app: &App) -> anyhow::Result<bool> {
    for account in app.store.accounts().context("cannot list the accounts")? {
        let people = app.store.people(&account.id).with_context(|| {
            format!("cannot list the people of account {}", account.id.as_str())
        })?;
        if !people.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Invites `owner` as the owner of the local account (the account the CLI and the engine act
/// for), which `App::open` created without anybody in it, and returns the one-time link.
/// Audited as done by the operator.
pub fn invite_local_owner(app: &App, owner: &NewOwner) -> anyhow::Result<OwnerInvitation> {
    check_email(&owner.email)?;
    let invitation = platform::accounts::invite_first_owner(
        app.store.as_ref(),
        &app.scrub_sets,
        &app.account,
        owner,
        App::cli_actor(),
        now(),
        OWNER_LINK_LIFETIME_MILLIS,
    )
    .context("cannot invite the owner of the local account")?;
    seed_examples(app)?;
    Ok(invitation)
}

/// Every example workflow and every agent they use, compiled in, so a newcomer's first start
/// has something to look at, check and run (a test holds this list to `examples/`).
const EXAMPLE_WORKFLOWS: &[(&str, &str)] = &[
    (
        "word_count.yaml",
        include_str!("../../../../examples/workflows/word_count.yaml"),
    ),
    (
        "monthly_invoices.yaml",
        include_str!("../../../../examples/workflows/monthly_invoices.yaml"),
    ),
    (
        "refund.yaml",
        include_str!("../../../../examples/workflows/refund.yaml"),
    ),
    (
        "weekly_digest.yaml",
        include_str!("../../../../examples/workflows/weekly_digest.yaml"),
    ),
    (
        "triage.yaml",
        include_str!("../../../../examples/workflows/triage.yaml"),
    ),
];
const EXAMPLE_AGENT: &[(&str, &str)] = &[
    (
        "digest/AGENT.md",
        include_str!("../../../../examples/agents/digest/AGENT.md"),
    ),
    (
        "digest/tools/release_notes.py",
        include_str!("../../../../examples/agents/digest/tools/release_notes.py"),
    ),
    (
        "triage/AGENT.md",
        include_str!("../../../../examples/agents/triage/AGENT.md"),
    ),
    (
        "ticket_filer/AGENT.md",
        include_str!("../../../../examples/agents/ticket_filer/AGENT.md"),
    ),
    (
        "ticket_filer/tools/file_ticket.py",
        include_str!("../../../../examples/agents/ticket_filer/tools/file_ticket.py"),
    ),
];

/// Puts the examples into the local account's workspace on its first start, as one revision
/// authored by the platform, unless it already holds a workflow (nothing of the account's own
/// is ever overwritten).
fn seed_examples(app: &App) -> anyhow::Result<()> {
    let workspace = app
        .workspaces()
        .for_account(&app.account)
        .context("cannot open the local account's workspace")?;
    let has_workflows = workspace
        .list_files()
        .context("cannot list the workspace")?
        .files
        .iter()
        .any(|file| file.path.starts_with("workflows/") && file.path.ends_with(".yaml"));
    if has_workflows {
        return Ok(());
    }
    let mut changes = Vec::new();
    let files = EXAMPLE_WORKFLOWS
        .iter()
        .map(|(name, text)| (format!("workflows/{name}"), text))
        .chain(
            EXAMPLE_AGENT
                .iter()
                .map(|(name, text)| (format!("agents/{name}"), text)),
        );
    for (path, text) in files {
        let path =
            workspace::RelPath::parse(&path).map_err(|refusal| anyhow::anyhow!("{refusal}"))?;
        if workspace.read_file(&path, 0)?.is_some() {
            continue;
        }
        changes.push((path, workspace::Change::Write(text.as_bytes().to_vec())));
    }
    if changes.is_empty() {
        return Ok(());
    }
    let redactor = app
        .redactor()
        .context("cannot read the account's values to screen the examples")?;
    workspace
        .commit(
            &workspace::Author::Platform {
                reason: "the examples of a first start".to_owned(),
            },
            "the example workflows and the agents they use",
            changes,
            &|content: &[u8]| redactor.holds_secret(content),
        )
        .context("cannot put the examples into the workspace")?;
    Ok(())
}

/// The part of an email before `@`, as the name the welcome page greets.
pub fn display_name_from_email(email: &str) -> String {
    email.split('@').next().unwrap_or(email).trim().to_owned()
}

/// An account id reaches folder names and URLs, so it is a plain name: lowercase letters,
/// digits, `-` and `_`, starting with a letter, at most 64 characters.
/// The id of a new account named `name`: an account id (`ids::AccountId`) that also starts
/// with a letter, so a new account's id never looks like a number.
fn check_account_name(name: &str) -> anyhow::Result<AccountId> {
    let starts_with_letter = name
        .bytes()
        .next()
        .is_some_and(|byte| byte.is_ascii_lowercase());
    match AccountId::parse(name) {
        Ok(id) if starts_with_letter => Ok(id),
        _ => bail!(
            "the account name {name:?} is not a plain name: use lowercase letters, digits, `-` and \
             `_`, starting with a letter, at most 64 characters"
        ),
    }
}

fn check_email(email: &str) -> anyhow::Result<()> {
    let email = email.trim();
    let well_formed = email.len() <= 254
        && email
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && !domain.is_empty())
        && !email.contains(char::is_whitespace);
    if !well_formed {
        bail!("`{email}` is not an email address: write it as name@example.com");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{check_account_name, check_email, display_name_from_email};

    #[test]
    fn g26_account_names_are_plain() {
        for good in ["acme", "team-2", "a_b"] {
            assert!(check_account_name(good).is_ok(), "{good}");
        }
        for bad in ["", "Acme", "../x", "a/b", "2team", "a b", &"a".repeat(65)] {
            assert!(check_account_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn owner_emails_are_checked_and_named() {
        assert!(check_email("ada@example.test").is_ok());
        for bad in ["", "ada", "@example.test", "ada@", "a da@example.test"] {
            assert!(check_email(bad).is_err(), "{bad}");
        }
        assert_eq!(display_name_from_email("ada@example.test"), "ada");
    }
}

#[cfg(test)]
mod example_tests {
    /// newcomer 3, friction 18: the first start installed four of the five examples. Every file
    /// of `examples/` is one the first start installs.
    #[test]
    fn the_first_start_installs_every_example() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut files = Vec::new();
        let mut pending = vec![root.clone()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    files.push(path.strip_prefix(&root).unwrap().display().to_string());
                }
            }
        }
        files.sort();
        let mut installed: Vec<String> = super::EXAMPLE_WORKFLOWS
            .iter()
            .map(|(name, _)| format!("workflows/{name}"))
            .chain(
                super::EXAMPLE_AGENT
                    .iter()
                    .map(|(name, _)| format!("agents/{name}")),
            )
            .collect();
        installed.sort();
        assert_eq!(installed, files);
    }
}
