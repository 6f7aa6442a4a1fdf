//! `stepward audit verify`: walks the audit log's hash chain.

use storage::AuditLog;

use crate::Outcome;
use crate::app::App;
use crate::cli::AuditCommand;
use crate::config::Config;

pub fn run(command: &AuditCommand, config: Config) -> anyhow::Result<Outcome> {
    let app = App::open(config)?;
    match command {
        AuditCommand::Verify => match app.store.verify_audit()? {
            Ok(entries) => {
                println!(
                    "the audit log is intact: {entries} entries, each chained to the one before"
                );
                Ok(Outcome::Done)
            }
            Err(broken) => {
                eprintln!("the audit log was changed: {broken}");
                Ok(Outcome::Invalid)
            }
        },
    }
}
