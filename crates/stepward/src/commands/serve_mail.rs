//! `serve --smtp` (issue 41): the mail settings from the command line and the environment,
//! checked before the server starts, and the mailer that drains the store's outbox.

use anyhow::{Context, bail};
use server::mail::SmtpSettings;
use zeroize::Zeroizing;

use crate::cli::MailArgs;

/// The environment variable the SMTP password may come from (never argv).
pub const PASSWORD_ENV: &str = "STEPWARD_SMTP_PASSWORD";

/// The mail settings `args` ask for; `None` without `--smtp`. Checked before the server
/// creates anything; every refusal says what to pass instead.
pub fn settings(args: &MailArgs) -> anyhow::Result<Option<SmtpSettings>> {
    let Some(url) = &args.smtp else {
        return Ok(None);
    };
    let Some(from) = &args.smtp_from else {
        bail!(
            "--smtp needs --smtp-from ADDRESS (or STEPWARD_SMTP_FROM): the address approve-link \
             mail comes from, such as `stepward <approvals@example.com>`"
        );
    };
    let password = match (&args.smtp_password_file, std::env::var(PASSWORD_ENV)) {
        (Some(path), _) => {
            let bytes = super::serve::read_owner_only_file(
                path,
                "SMTP password file",
                "a file holding the password",
                "the password",
            )?;
            let text = std::str::from_utf8(&bytes).with_context(|| {
                format!("the SMTP password file {} is not UTF-8", path.display())
            })?;
            Some(Zeroizing::new(
                text.trim_end_matches(['\n', '\r']).to_owned(),
            ))
        }
        (None, Ok(password)) => Some(Zeroizing::new(password)),
        (None, Err(_)) => None,
    };
    let ca = args
        .smtp_ca
        .as_ref()
        .map(|path| {
            std::fs::read(path)
                .with_context(|| format!("cannot read the SMTP CA file {}", path.display()))
        })
        .transpose()?;
    Ok(Some(SmtpSettings::parse(
        url,
        from,
        password,
        ca,
        args.smtp_plain,
    )?))
}
