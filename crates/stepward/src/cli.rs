//! The command line, declared with clap's derive API.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use storage::{AccountId, RunId};

use crate::config::GlobalArgs;

/// Runs workflows written by an AI assistant, each step in a fresh, hardened sandbox.
#[derive(Debug, Parser)]
#[command(name = "stepward", version, about)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check workflow files (`*.yaml`) and agent files (`AGENT.md`): exit 0 if all are valid,
    /// 1 if any is invalid, 2 on a usage or IO error.
    Check(CheckArgs),
    /// Show what each step of a workflow is permitted to reach.
    Reach(ReachArgs),
    /// Print the JSON Schema of the workflow format, for editors with a YAML language server.
    Schema,
    /// Run a workflow to completion, to a gate, or to a point where a person must decide.
    Run(RunArgs),
    /// List runs, show one, read its events, or decide on a run that needs attention.
    #[command(subcommand)]
    Runs(RunsCommand),
    /// Approve the gate a run waits at; the run goes on.
    Approve(DecideArgs),
    /// Reject the gate a run waits at; the run stops.
    Reject(DecideArgs),
    /// Secrets of the local account: set (value on stdin), list (names only), remove.
    #[command(subcommand)]
    Secrets(SecretsCommand),
    /// Connections of the local account: an alias with named fields (values on stdin).
    #[command(subcommand)]
    Connections(ConnectionsCommand),
    /// The local account's workspace (what steps see at `/work`): every write a revision
    /// authored by this operating-system user.
    #[command(subcommand)]
    Files(FilesCommand),
    /// The local account's workflows (`workflows/NAME.yaml` of its workspace) and their
    /// versions: every saved change is one, with its author and time.
    #[command(subcommand)]
    Workflows(WorkflowsCommand),
    /// Key management.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// The audit log.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Serve the console and the JSON API over this data directory. On first start it invites
    /// the owner of the local account and prints a one-time sign-in link.
    Serve(ServeArgs),
    /// Run the data directory's steps for a `stepward serve --workers 0`: claims queued step
    /// attempts and runs them, until SIGINT or SIGTERM.
    Worker(WorkerArgs),
    /// The server's accounts (an operator command on the server's data).
    #[command(subcommand)]
    Accounts(AccountsCommand),
    /// The local account's model providers: add one (its key on stdin), list, remove, pick
    /// the default, test that a key works.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// The custom tools of the local account's agents: run one once, in a fresh sandbox like
    /// any step, with an allowlisted environment (its agent's secrets only with
    /// `--with-secrets` and a confirmation of the script).
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Tools for trying stepward by hand.
    #[command(subcommand)]
    Dev(DevCommand),
    /// Ask the assistant to repair the step of a run that needs repair (G9): its proposal
    /// (standard library only, only the step's code changed) is checked, then shown. With
    /// `--accept`, the shown proposal becomes the workflow's next version, authored by the
    /// assistant and accepted by you, and the run goes on from that step with it.
    Repair(RepairArgs),
    /// Interview with the assistant about a workflow (a new one, or NAME): each line you type
    /// on stdin is a message; the assistant asks and proposes. Every proposal is checked before
    /// it is shown, with what each step can reach and the authoring lints; nothing runs. Type
    /// `confirm` to save the proposal shown as the workflow's next version (authored by the
    /// assistant, accepted by you), `quit` to end without saving.
    Interview(InterviewArgs),
}

#[derive(Debug, Args)]
pub struct InterviewArgs {
    /// The workflow to change; none for a new workflow.
    pub name: Option<String>,
}

#[derive(Debug, Args)]
pub struct RepairArgs {
    pub run: RunId,
    /// The step that needs repair.
    pub step: String,
    /// Accept the proposal shown by the last `stepward repair RUN STEP`.
    #[arg(long)]
    pub accept: bool,
    /// Why you accept it (recorded with who accepted); by default "accepted the assistant's
    /// repair".
    #[arg(long)]
    pub note: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Add a provider, or replace one's settings and key. The key is read from stdin (not
    /// echoed on a terminal) and stored sealed in the vault as a model key. The first provider
    /// added is the account's default.
    Add {
        /// How agent files name it (`model: NAME/MODEL_ID`): lower-case letters, digits, `-`
        /// and `_`, starting with a letter.
        name: String,
        /// `anthropic` (Anthropic's Messages API) or `openai` (any OpenAI-compatible Chat
        /// Completions endpoint: OpenAI, llama.cpp's server, vLLM, Ollama).
        #[arg(long, value_parser = ["anthropic", "openai"])]
        provider: String,
        /// Where its API is: by default `https://api.anthropic.com` or
        /// `https://api.openai.com/v1`; for a local server e.g. `http://127.0.0.1:8081/v1`
        /// (which the operator exempts with `--allow-model-endpoint 127.0.0.1:8081`).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// The model the platform's own assistant uses on this provider (the supervisor,
        /// repair, the interview).
        #[arg(long, value_name = "ID")]
        assistant_model: Option<String>,
    },
    /// The providers: names, kinds, URLs, the default; never a key.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a provider and its key.
    Rm { name: String },
    /// Make a provider the account's default (what a bare model id in an agent file means).
    Default { name: String },
    /// Send one short prompt and print the answer, the model and the tokens used.
    Test {
        name: String,
        /// The model to ask; by default the provider's `--assistant-model`.
        #[arg(long, value_name = "ID")]
        model: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Who sees a failed step (the supervisor, G15: the default provider's assistant model,
    /// or a person) and how many times it may retry one step of one run; `--retries N`
    /// (0 to 5) sets that number, `--retries default` goes back to 2.
    Supervisor {
        #[arg(long, value_name = "N|default")]
        retries: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Run the custom tool TOOL of the agent AGENT once with the arguments given, and print
    /// the scrubbed record kept of it (also in the audit log).
    Test {
        agent: String,
        tool: String,
        /// One argument of the tool, `NAME=VALUE` (repeatable): a string as it is; a number,
        /// a boolean, an object or a list as JSON.
        #[arg(long = "input", value_name = "NAME=VALUE")]
        input: Vec<String>,
        /// Put the agent's `secrets:` in the tool's environment. Without `--confirm`, shows
        /// who last changed the script, when, and what changed since the last test with
        /// secrets, and runs nothing.
        #[arg(long)]
        with_secrets: bool,
        /// The SHA-256 of the script you confirm (the one `--with-secrets` shows): a script
        /// changed since runs nothing.
        #[arg(long, value_name = "SHA256", requires = "with_secrets")]
        confirm: Option<String>,
        /// The Python the tool runs under, `MAJOR.MINOR` (3.11 when not given).
        #[arg(long, value_name = "MAJOR.MINOR")]
        python: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum DevCommand {
    /// Run the fake model server (both wire formats, streaming and not) replaying a script
    /// of turns, so the console and the demo can be tried without a key. The script format
    /// is in docs/agents.md. Loopback addresses only.
    FakeModel {
        #[arg(long, default_value = "127.0.0.1:8081")]
        listen: std::net::SocketAddr,
        /// The script: a JSON file of turns.
        #[arg(long, value_name = "FILE")]
        script: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// How many steps this worker runs at once (sandboxed steps; agent turns waiting on a
    /// model take separate slots, 8). Default: the machine's cores.
    #[arg(long, env = "STEPWARD_WORKERS", value_name = "N")]
    pub workers: Option<u32>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// How many steps this server runs at once in its own worker (sandboxed steps; agent
    /// turns waiting on a model take separate slots, 8). 0: none, and `stepward worker` runs
    /// them beside it. Default: the machine's cores.
    #[arg(long, env = "STEPWARD_WORKERS", value_name = "N")]
    pub workers: Option<u32>,
    /// The address to listen on (port 0: any free port; the address is printed).
    #[arg(long, env = "STEPWARD_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: std::net::SocketAddr,
    /// The server's address as people reach it (`https://stepward.example.com`). Every
    /// address its host resolves to at start is denied to model endpoints, like the listen
    /// address, so no provider's base URL points the platform at its own API.
    #[arg(long, env = "STEPWARD_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<llm::Url>,
    /// The email of the first owner, invited on first start when nobody exists yet.
    #[arg(long, env = "STEPWARD_OWNER_EMAIL", default_value = "owner@localhost")]
    pub owner_email: String,
    /// Clients reach this server over HTTPS (a TLS-terminating proxy in front): session cookies
    /// are then `Secure` and `__Host-` prefixed.
    #[arg(long, env = "STEPWARD_BEHIND_TLS")]
    pub behind_tls: bool,
    /// The address of the reverse proxy in front: for connections from it, the client is the
    /// last address it appended to `X-Forwarded-For` (sign-in limits and the audit log). No
    /// other client's `X-Forwarded-For` is read.
    #[arg(long, env = "STEPWARD_TRUSTED_PROXY", value_name = "IP")]
    pub trusted_proxy: Option<std::net::IpAddr>,
    /// Serve HTTPS with this certificate chain (PEM, the server's certificate first), with
    /// `--tls-key`: session cookies are then `Secure` and `__Host-` prefixed. Not with
    /// `--behind-tls`, which says a proxy in front terminates TLS instead.
    #[arg(
        long,
        env = "STEPWARD_TLS_CERT",
        value_name = "PATH",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The private key of `--tls-cert` (PEM: PKCS#8, PKCS#1 or SEC1), in a file only its owner
    /// may read (mode 600).
    #[arg(
        long,
        env = "STEPWARD_TLS_KEY",
        value_name = "PATH",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    #[command(flatten)]
    pub mail: MailArgs,
}

/// Approve links by mail (issue 41): this server drains the store's outbox and mails each
/// waiting gate's link to the people who may decide it.
#[derive(Debug, Args)]
pub struct MailArgs {
    /// The SMTP server: `smtp://[USER@]HOST[:PORT]` (STARTTLS, required: a server that does
    /// not offer it gets nothing; port 587) or `smtps://[USER@]HOST[:PORT]` (implicit TLS, port
    /// 465). The password never goes here: see --smtp-password-file.
    #[arg(long, env = "STEPWARD_SMTP", value_name = "URL")]
    pub smtp: Option<String>,
    /// The address the mail comes from (`stepward <approvals@example.com>`).
    #[arg(
        long,
        env = "STEPWARD_SMTP_FROM",
        value_name = "ADDRESS",
        requires = "smtp"
    )]
    pub smtp_from: Option<String>,
    /// A file (mode 600) holding the SMTP password of the URL's user; or the environment
    /// variable STEPWARD_SMTP_PASSWORD.
    #[arg(
        long,
        env = "STEPWARD_SMTP_PASSWORD_FILE",
        value_name = "PATH",
        requires = "smtp"
    )]
    pub smtp_password_file: Option<PathBuf>,
    /// Trust only this CA (PEM) for the SMTP server's certificate, instead of the system's.
    #[arg(long, env = "STEPWARD_SMTP_CA", value_name = "PATH", requires = "smtp")]
    pub smtp_ca: Option<PathBuf>,
    /// Send without TLS: only to a loopback address (a local relay), only with smtp://.
    #[arg(long, env = "STEPWARD_SMTP_PLAIN", requires = "smtp")]
    pub smtp_plain: bool,
}

#[derive(Debug, Subcommand)]
pub enum AccountsCommand {
    /// Create an account with its owner and print the owner's one-time sign-in link.
    Create {
        /// The account's id: lowercase letters, digits, `-` and `_`.
        name: String,
        #[arg(long)]
        owner_email: String,
        /// The owner's name; by default the part of the email before `@`.
        #[arg(long)]
        owner_name: Option<String>,
        /// The server's address as people reach it, to print the link with; by default the
        /// address `stepward serve` last served this data directory on.
        #[arg(long, env = "STEPWARD_PUBLIC_URL", value_name = "URL")]
        base_url: Option<String>,
    },
    /// A new one-time sign-in link for an account's owner (a lost or expired link, a first
    /// start whose link nobody saw); every earlier link of the owner stops working. Recorded
    /// in the audit log.
    InviteOwner {
        /// The account's id (`local` for the one `stepward serve` invites on first start).
        account: AccountId,
        /// The server's address as people reach it, to print the link with; by default the
        /// address `stepward serve` last served this data directory on.
        #[arg(long, env = "STEPWARD_PUBLIC_URL", value_name = "URL")]
        base_url: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The workflow: a saved one's NAME (the workspace's current `workflows/NAME.yaml`), or a
    /// file (an argument with a `/` in it or ending in `.yaml` or `.yml` is always a file).
    #[arg(value_name = "NAME|FILE")]
    pub file: PathBuf,
    /// A workflow input, `NAME=VALUE`; repeat for each. A `string` input takes VALUE as is;
    /// any other type reads VALUE as JSON (`top=3`, `lines=[{"customer":"a","cents":5}]`).
    #[arg(long = "input", value_name = "NAME=VALUE")]
    pub inputs: Vec<String>,
    /// Print the run as JSON (what the steps printed is in `stepward runs events RUN`).
    #[arg(long)]
    pub json: bool,
    /// Do not show what the steps printed; only where the run stands.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// The local account's runs, newest first.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One run: its status and each step's latest attempt.
    Show {
        run: RunId,
        #[arg(long)]
        json: bool,
    },
    /// A run's event log, in order.
    Events {
        run: RunId,
        #[arg(long)]
        json: bool,
    },
    /// A person's decision to run again the step that stopped a run (the only way an `unknown`
    /// step ever runs again).
    Retry {
        run: RunId,
        step: String,
        /// New inputs for the step, `NAME=VALUE` with VALUE as JSON (or a plain string).
        #[arg(long = "input", value_name = "NAME=VALUE")]
        inputs: Vec<String>,
        /// Why it is safe to run it again.
        #[arg(long)]
        note: String,
    },
    /// A person's decision to stop a run that needs attention.
    Stop {
        run: RunId,
        #[arg(long)]
        note: String,
    },
}

#[derive(Debug, Args)]
pub struct DecideArgs {
    pub run: RunId,
    /// The gate step (with or without its `!`).
    pub step: String,
    /// What the decision rests on; recorded with who decided and through which door.
    #[arg(long)]
    pub note: String,
}

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// Set a secret; the value is read from stdin, never from an argument.
    Set { name: String },
    /// Names, versions and dates; never values.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a secret.
    Rm { name: String },
}

#[derive(Debug, Subcommand)]
pub enum FilesCommand {
    /// Every file of the workspace, with its size.
    List {
        /// Print the files as JSON (the API's `WorkspaceFileItem`s).
        #[arg(long)]
        json: bool,
    },
    /// Write one file as a revision; the contents are read from `--from FILE`, or stdin.
    Put {
        /// The file's path inside the workspace, e.g. `inputs/lines.csv`.
        path: String,
        /// Read the contents from this file instead of stdin.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
        /// Why, kept in the history.
        #[arg(long, default_value = "written with the command line")]
        message: String,
        /// Confirms the changed reach of this saved workflow (repeat for each): a write of an
        /// agent file, or of a script an agent names, that changes what a saved workflow may
        /// reach or run is refused with the list and the changed rows until each is named.
        #[arg(long = "confirm-reach", value_name = "WORKFLOW")]
        confirm_reach: Vec<String>,
    },
    /// Delete one file as a revision.
    Rm {
        path: String,
        #[arg(long, default_value = "deleted with the command line")]
        message: String,
        /// As for `files put`.
        #[arg(long = "confirm-reach", value_name = "WORKFLOW")]
        confirm_reach: Vec<String>,
    },
    /// The revisions, newest first, with their authors.
    History {
        /// Print the revisions as JSON (the API's `WorkspaceRevisionView`s).
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum WorkflowsCommand {
    /// Every workflow with its newest version.
    List {
        #[arg(long)]
        json: bool,
    },
    /// A workflow's versions (number, author, time, message), then the text of the newest or
    /// of `--version N`.
    Show {
        name: String,
        #[arg(long, value_name = "N")]
        version: Option<u32>,
    },
    /// The unified diff from version A to version B.
    Diff { name: String, a: u32, b: u32 },
    /// The newest version's text, as it can be saved elsewhere: connection references only.
    Export { name: String },
    /// Save a file as the workflow's next version (parsed first; refused with its diagnostics
    /// when invalid).
    Save {
        name: String,
        /// The workflow file.
        file: PathBuf,
        #[arg(long, default_value = "saved with the command line")]
        message: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConnectionsCommand {
    /// Add (or replace) a connection; one value per field is read from stdin, one per line, in
    /// the order of the `--field` flags.
    Add {
        alias: String,
        #[arg(long = "field", required = true)]
        fields: Vec<String>,
    },
    /// Aliases and field names; never values.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a connection.
    Rm { alias: String },
}

#[derive(Debug, Subcommand)]
// The subcommands are `rotate-root`, `rotate-account` and `rotate-links` (DESIGN section 4).
#[allow(clippy::enum_variant_names)]
pub enum KeysCommand {
    /// Rotate the root key, then every account's data key (each account's values are
    /// re-encrypted); run again to finish a rotation that was interrupted.
    RotateRoot {
        /// Where the new root key is (a file holding 64 hexadecimal characters, mode 600,
        /// outside the data directory); by default a new key in the default key file.
        #[arg(long, value_name = "P")]
        new_root_key_file: Option<PathBuf>,
        /// Write a new random key to `--new-root-key-file` first (refused if it exists).
        #[arg(long, requires = "new_root_key_file")]
        generate: bool,
    },
    /// Rotate one account's data key: every value of the account is re-encrypted under a new
    /// key, so the old data key (in a copy of the key table made before) opens nothing stored
    /// afterwards.
    RotateAccount {
        /// The account (`local` for the command line's own).
        account: AccountId,
    },
    /// Replace the server's approve-link signing key: every approve link sent so far stops
    /// working. Refused while `stepward serve` runs on this data directory.
    RotateLinks,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check the audit log's hash chain: a changed or deleted entry is reported.
    Verify,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The files to check.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print the diagnostics as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReachArgs {
    /// The workflow file.
    pub file: PathBuf,
    /// Where agent folders live (`<dir>/<name>/AGENT.md`); by default the account's workspace,
    /// which `stepward run` takes them from, and for an agent it lacks (or with no data
    /// directory here) the `agents` folder beside the workflow's folder.
    #[arg(long)]
    pub agents: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}
