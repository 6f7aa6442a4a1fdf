//! `stepward audit verify`: walks every account's audit chain (and the one shared chain of
//! the entries written before each account had its own) and names the first broken link of
//! each in words.

use storage::{AuditLog, SERVER_CHAIN};

use crate::Outcome;
use crate::app::App;
use crate::cli::AuditCommand;
use crate::config::Config;

pub fn run(command: &AuditCommand, config: Config) -> anyhow::Result<Outcome> {
    let app = App::open_installed(config)?;
    match command {
        AuditCommand::Verify => {
            let verification = app.store.verify_audit()?;
            for (account, result) in &verification.chains {
                let chain = if account.as_str() == SERVER_CHAIN {
                    "the server's own chain (attempts at accounts that do not exist)".to_owned()
                } else {
                    format!("account {account}")
                };
                match result {
                    Ok(entries) => {
                        outln!("{chain}: intact, {entries} entries, each chained to the one before")
                    }
                    Err(broken) => errln!("error: the audit log was changed: {broken}"),
                }
            }
            match &verification.legacy {
                Ok(0) => {}
                Ok(entries) => outln!(
                    "the {entries} entries written before each account had its own chain: \
                     intact, each chained to the one before"
                ),
                Err(broken) => errln!("error: the audit log was changed: {broken}"),
            }
            if verification.first_break().is_some() {
                Ok(Outcome::Invalid)
            } else {
                if verification.chains.is_empty() {
                    outln!("the audit log is empty");
                }
                Ok(Outcome::Done)
            }
        }
    }
}
