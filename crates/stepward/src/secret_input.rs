//! Reading secret values from the person running a command: from a terminal one line at a
//! time with echo off, each ending at Enter; from a pipe, all of stdin to its end. The bytes
//! are read into one buffer allocated to its bound up front, so it never grows (growing would
//! free an unzeroed copy), and zeroed when dropped; each value moves into a `SecretValue`.

use std::io::{BufRead, IsTerminal, Read};

use anyhow::{Context, bail};
use redact::SecretValue;
use zeroize::Zeroizing;

/// The most bytes read for a command's values.
const MAX_INPUT_BYTES: usize = 1024 * 1024;

/// Reads `labels.len()` values: on a terminal, a prompt for each (`the value of {label}`) and a
/// line typed without echo; from a pipe, one value per line, or the whole input for a single
/// value (so a multi-line key can be piped in, one trailing newline taken off). A value may
/// not be empty.
pub fn read_values(labels: &[String]) -> anyhow::Result<Vec<SecretValue>> {
    let stdin = std::io::stdin();
    let mut input = Zeroizing::new(Vec::with_capacity(MAX_INPUT_BYTES + 1));
    let terminal = stdin.is_terminal();
    if terminal {
        let _echo_off = EchoOff::new()?;
        for label in labels {
            err!("the value of {label} (not shown as you type, Enter to end): ");
            let before = input.len();
            stdin
                .lock()
                .take((MAX_INPUT_BYTES - input.len()) as u64)
                .read_until(b'\n', &mut input)
                .context("cannot read the value from the terminal")?;
            errln!();
            if input.len() == before || input.last() != Some(&b'\n') {
                input.push(b'\n');
            }
        }
    } else {
        stdin
            .lock()
            .take(MAX_INPUT_BYTES as u64)
            .read_to_end(&mut input)
            .context("cannot read the value(s) from stdin")?;
    }
    let text = std::str::from_utf8(&input).context("the value(s) are not UTF-8 text")?;
    let values: Vec<&str> = if labels.len() == 1 && !terminal {
        let value = text.strip_suffix('\n').unwrap_or(text);
        vec![value.strip_suffix('\r').unwrap_or(value)]
    } else {
        text.lines().collect()
    };
    if values.len() != labels.len() || values.iter().any(|value| value.is_empty()) {
        bail!(
            "expected {} non-empty value(s), one per line, in the order of {}; got {}",
            labels.len(),
            labels.join(", "),
            values.iter().filter(|value| !value.is_empty()).count()
        );
    }
    Ok(values
        .into_iter()
        .map(|value| SecretValue::new(value.to_owned()))
        .collect())
}

/// Turns the terminal's echo off until dropped.
struct EchoOff {
    saved: rustix::termios::Termios,
}

impl EchoOff {
    fn new() -> anyhow::Result<EchoOff> {
        let stdin = std::io::stdin();
        let saved =
            rustix::termios::tcgetattr(&stdin).context("cannot read the terminal's settings")?;
        let mut quiet = saved.clone();
        quiet.local_modes.remove(rustix::termios::LocalModes::ECHO);
        rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &quiet)
            .context("cannot turn the terminal's echo off")?;
        Ok(EchoOff { saved })
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        // Restoring can only fail if the terminal went away; nothing is left to restore then.
        let _ = rustix::termios::tcsetattr(
            std::io::stdin(),
            rustix::termios::OptionalActions::Now,
            &self.saved,
        );
    }
}
