//! The composition root: opens the store and the vault, finds or creates the local account,
//! and builds the engine with the sandbox behind it.
//!
//! Only the process holding the data directory's engine lock may drive runs: recovery marks
//! every attempt it finds running as interrupted, which would be wrong for another live process.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use engine::{
    Driving, Engine, EngineOptions, PersonDecision, PersonSupervisor, RandomRunIds, SystemClock,
};
use redact::{Redactor, ScrubSets};
use sandbox::Isolation;
use storage::{Account, AccountId, AccountStore, Actor, AuditLog, Door, NewAuditEntry, Timestamp};
use storage_sqlite::SqliteStore;
use vault::{Vault, VaultOptions};
use workspace::Workspaces;

use crate::backend_setup::FirstStep;
use crate::backend_setup::{EarlyBackend, Started};
use crate::backend_setup::{RemoveStateDir, private_data_dir};
use crate::config::{Backend, Config};
pub use crate::engine_lock::EngineLock;
use worker::executor::SandboxExecutor;

/// The id of the one account the CLI acts for without a server (DESIGN section 2).
pub const LOCAL_ACCOUNT_ID: &str = "local";

/// The store, the vault and the local account, opened once per command.
pub struct App {
    pub config: Config,
    pub store: Arc<SqliteStore>,
    pub vault: Arc<Vault>,
    /// Every account's live scrub set (G16), shared by the engine, the server and the logs.
    pub scrub_sets: ScrubSets,
    pub account: AccountId,
}

impl App {
    /// Opens an installation that exists: for the commands that read or change one and have no
    /// reason to make one (newcomer 3, friction 2: `runs list` in the wrong folder made a
    /// second, empty installation and a new root key). Refuses, naming the folder, when its
    /// database is not there; nothing is created.
    pub fn open_installed(config: Config) -> anyhow::Result<App> {
        if !config.database_path().exists() {
            anyhow::bail!(
                "there is no stepward installation in {} (no stepward.db there), and this \
                 command does not make one: run it from the folder that holds `stepward-data`, \
                 or give the installation's place with --data-dir DIR (or STEPWARD_DATA_DIR); \
                 nothing was created",
                shown_path(&config.data_dir)
            );
        }
        App::open(config)
    }

    /// Opens (creating on first use, and saying so first) the data directory, its database,
    /// the vault and the local account. Prints the vault's notice (where a new root key was
    /// put) to stderr.
    pub fn open(config: Config) -> anyhow::Result<App> {
        if !config.database_path().exists() {
            errln!(
                "No stepward installation in {} yet: making one there (its database, files and \
                 vault; the vault's root key is said below).",
                shown_path(&config.data_dir)
            );
        }
        private_data_dir(&config.data_dir)?;
        let store = Arc::new(SqliteStore::open(&config.database_path()).with_context(|| {
            format!(
                "cannot open the database {}",
                config.database_path().display()
            )
        })?);
        config.timings.mark("store (open, migrations)");
        let (vault, notice) = Vault::open(
            &VaultOptions::new(config.root_key.clone(), &config.data_dir),
            store.clone(),
        )
        .context("cannot open the vault")?;
        if let Some(notice) = notice {
            errln!("{notice}");
        }
        move_single_account_workspace(&config)?;
        let account = AccountId::parse(LOCAL_ACCOUNT_ID).context("the local account id")?;
        store
            .ensure_account(&Account {
                id: account.clone(),
                name: "local".to_owned(),
                created_at: now(),
            })
            .context("cannot create the local account")?;
        let vault = Arc::new(vault);
        let scrub_sets = ScrubSets::new(vault.clone());
        // The account's values are a superset of any of its runs' values; building its set
        // now puts it in the panic and error scrubber at once.
        scrub_sets
            .for_account(&account)
            .context("cannot build the account's redactor")?;
        // Kept until the process ends, not while the app lives: `main` prints a command's
        // error after the app is dropped, and it must be scrubbed too (review N3).
        config.scrub_registry.keep_sets(scrub_sets.clone());
        // Workflows and agents live in the accounts' workspaces (issue 16 §1): an older data
        // directory's folders beside them move in, one revision per account, once.
        let workspaces =
            Workspaces::new(config.accounts_dir()).with_quota(config.workspace_quota_bytes);
        for line in crate::layout::move_definitions_into_workspaces(
            &config.accounts_dir(),
            &workspaces,
            &scrub_sets,
        )? {
            errln!("{line}");
        }
        config.timings.mark("vault, account and redactor");
        let app = App {
            config,
            store,
            vault,
            scrub_sets,
            account,
        };
        // A workspace write a stopped process left announced but unsettled is settled by the
        // next process that opens the data, whichever it is (issue 37): not only by `serve`.
        match app.reading_engine().recover_workspace_writes() {
            Ok(done) => say_writes_recovered(&done),
            Err(error) => errln!(
                "warning: the workspace writes an earlier process left unfinished could not be \
                 read now ({:#}); the next command tries again",
                anyhow::Error::new(error)
            ),
        }
        app.config
            .timings
            .mark("recovery of interrupted workspace writes");
        Ok(app)
    }

    /// The run `run` of the local account, or an error that names the installation searched
    /// (a run "missing" is most often a command run in another folder).
    pub fn run_record(&self, run: &storage::RunId) -> anyhow::Result<storage::RunRecord> {
        use storage::RunStore as _;
        self.store
            .run(run)
            .context("cannot read the run")?
            .filter(|record| record.account == self.account)
            .with_context(|| {
                format!(
                    "there is no run {run} in the installation {}; `stepward runs list` shows \
                     the runs there are (a run of another installation needs --data-dir)",
                    shown_path(&self.config.data_dir)
                )
            })
    }

    /// The workflow a run runs, read again from its record (any limits: it is read, not run);
    /// `None` when the stored text no longer parses.
    pub fn workflow_of(record: &storage::RunRecord) -> Option<spec::Workflow> {
        spec::parse_workflow_within(
            &record.workflow_file_name,
            &record.workflow_source,
            &spec::LimitMaxima::UNBOUNDED,
        )
        .ok()
    }

    /// Who wrote a revision, in words a person reads (newcomer 3, friction 12): a person by
    /// name and email (as the store has them now, or the id of one removed since), a key by its
    /// name; the rest as [`workspace::Author::describe`] says.
    pub fn author_words(&self, author: &workspace::Author) -> String {
        use storage::people::PeopleStore as _;
        let person = |id: &str| match self.store.person(id) {
            Ok(Some(person)) => format!("{} ({})", person.display_name, person.email),
            _ => format!("person {id} (no longer in the account)"),
        };
        match author {
            workspace::Author::Person { id } => person(id),
            workspace::Author::Assistant { accepted_by } => {
                format!("the assistant, accepted by {}", person(accepted_by))
            }
            workspace::Author::Cli { os_user } => format!("{os_user} (command line)"),
            workspace::Author::ApiKey { id } => match self.store.api_key(id) {
                Ok(Some(key)) => format!("the API key {}", key.name),
                _ => format!("the API key {id}"),
            },
            other => other.describe(),
        }
    }

    /// Who the CLI acts as: the operating-system user (decisions record the door `cli`).
    pub fn cli_actor() -> Actor {
        Actor::Cli { os_user: os_user() }
    }

    /// A person's decision through the CLI: the operating-system user, the door `cli`.
    pub fn decision(&self, note: &str) -> PersonDecision {
        PersonDecision {
            who: App::cli_actor(),
            door: Door::Cli,
            note: note.to_owned(),
        }
    }

    /// What [`App::audit`] appends, for a write that appends its entry in its own transaction
    /// (the vault's `_audited` calls): built with the account's redactor, which must be built
    /// before the write.
    pub fn audit_entry(
        &self,
        redactor: &Redactor,
        action: storage::AuditAction,
        detail: &serde_json::Value,
    ) -> NewAuditEntry {
        NewAuditEntry {
            account: self.account.clone(),
            run: None,
            actor: redactor.scrub_fields(App::cli_actor()),
            action,
            detail: redactor.scrub_json(detail),
            at: now(),
        }
    }

    /// The local account's redactor for an audit entry, or why it cannot be built.
    pub fn audit_redactor(&self) -> anyhow::Result<Redactor> {
        self.redactor()
            .context("cannot build the account's redactor for the audit log")
    }

    /// Appends an audit entry for the local account, its detail scrubbed of every current
    /// value of the account.
    pub fn audit(
        &self,
        action: storage::AuditAction,
        detail: serde_json::Value,
    ) -> anyhow::Result<()> {
        let redactor = self
            .redactor()
            .context("cannot build the account's redactor for the audit log")?;
        self.store
            .append_audit(&NewAuditEntry {
                account: self.account.clone(),
                run: None,
                actor: redactor.scrub_fields(App::cli_actor()),
                action,
                detail: redactor.scrub_json(&detail),
                at: now(),
            })
            .context("cannot write the audit log")?;
        Ok(())
    }

    /// The local account's live redactor: what a command writes or shows of the account's
    /// records passes through it.
    pub fn redactor(&self) -> Result<Redactor, redact::Error> {
        self.scrub_sets.for_account(&self.account)
    }

    /// An engine for reading runs only: it never recovers, takes no lock and runs nothing
    /// (its executor refuses every step).
    pub fn reading_engine(&self) -> Engine {
        Engine::new(
            self.engine_options(),
            self.store.clone(),
            Arc::new(worker::guards::RefusingExecutor),
            self.scrub_sets.clone(),
            Arc::new(PersonSupervisor),
            Arc::new(SystemClock),
            Arc::new(RandomRunIds),
        )
    }

    /// Every account's workspace lives in its own folder under the data directory.
    pub fn workspaces(&self) -> Workspaces {
        Workspaces::new(self.config.accounts_dir()).with_quota(self.config.workspace_quota_bytes)
    }

    fn engine_options(&self) -> EngineOptions {
        let mut options = EngineOptions::new(self.workspaces());
        options.limit_maxima = self.config.limit_maxima;
        // Its inline jobs are held as this process, which the next command can prove dead
        // (issue 38): a killed `stepward run` never blocks the next one for a lease's length.
        // A process whose identity cannot be read holds its jobs until their leases run out.
        if let Ok(holder) = worker::holder::this_process() {
            options.holder = holder;
        }
        options.holder_dead = worker::holder::dead_here;
        // A saved workflow is checked against the account as every door reads it (issue 41).
        let store = self.store.clone();
        options.account_names = Some(engine::AccountNamesSource(Arc::new(move |account| {
            platform::providers::account_names(store.as_ref(), account)
                .map_err(|error| error.to_string())
        })));
        options
    }

    /// Takes the engine lock, sweeps what a crash left in the sandbox, recovers interrupted
    /// runs, and returns an engine whose steps run in the configured backend.
    pub fn engine(&self) -> anyhow::Result<(Engine, Option<Arc<EngineLock>>)> {
        self.engine_ahead(None)
    }

    /// [`App::engine`] for a command that is about to start a run whose first step is the
    /// code step `first`: the local backend starts building that step's sandbox right after
    /// its start-up sweep, so the sandbox's build overlaps recovery and the engine's writing
    /// of the run's record (`stepward run`; issue 13, part 2).
    ///
    /// When another live process holds the data directory's engine lock as a worker (a
    /// `stepward serve` with workers, a `stepward worker`), its workers run the steps: the
    /// engine returned runs none, and a door's command follows its run in the store
    /// ([`Driving::Follow`]). Beside another command, it is refused, naming it.
    pub fn engine_ahead(
        &self,
        first: Option<FirstStep>,
    ) -> anyhow::Result<(Engine, Option<Arc<EngineLock>>)> {
        let lock = match self.take_engine_lock() {
            Ok(lock) => lock,
            Err(error) => {
                let held = error.downcast_ref::<crate::engine_lock::LockHeld>();
                let Some(worker) = held
                    .filter(|held| held.runs_workers())
                    .and_then(crate::engine_lock::LockHeld::holder_pid)
                else {
                    // Another command drives its own run: it runs no one else's, so this one
                    // waits for it to finish, as it always did.
                    return Err(error);
                };
                // Followed while that process lives: once it is gone, nobody runs the steps,
                // and the command says so rather than wait for ever. Only looked at, never
                // locked: a server starting meanwhile must get the lock.
                let proc_entry = PathBuf::from(format!("/proc/{worker}"));
                let engine = self
                    .engine_elsewhere(Driving::Follow)?
                    .with_worker_check(Arc::new(move || proc_entry.exists()));
                return Ok((engine, None));
            }
        };
        self.engine_locked(lock, first, Driving::Inline)
    }

    /// The engine of the process holding `lock`: its backend started (building `first`'s
    /// sandbox ahead), what a crash left recovered.
    fn engine_locked(
        &self,
        lock: EngineLock,
        first: Option<FirstStep>,
        driving: Driving,
    ) -> anyhow::Result<(Engine, Option<Arc<EngineLock>>)> {
        self.config.timings.mark("engine lock");
        let backend = self.backend(first)?;
        self.engine_on(lock, RemoveStateDir::of(&self.config), backend, driving)
    }

    /// An engine for `stepward serve`: with `workers`, it holds the engine lock (its
    /// in-process workers run the steps) and recovers; without (`--workers 0`), it runs no
    /// sandbox and leaves recovery to the process that runs the workers. Either way a door
    /// answers at once ([`Driving::Queue`]).
    pub fn serving_engine(
        &self,
        workers: bool,
    ) -> anyhow::Result<(Engine, Option<Arc<EngineLock>>)> {
        if !workers {
            return Ok((self.engine_elsewhere(Driving::Queue)?, None));
        }
        self.engine_locked(self.take_engine_lock()?, None, Driving::Queue)
    }

    /// An engine that runs no step, on a backend that builds and sweeps nothing
    /// ([`worker::guards::Elsewhere`]): another process's workers run the steps.
    fn engine_elsewhere(&self, driving: Driving) -> anyhow::Result<Engine> {
        self.engine_over(Arc::new(worker::guards::Elsewhere), driving)
    }

    /// [`App::engine`] on the backend [`EarlyBackend::start`] set up before the app was opened
    /// (`stepward run`).
    pub fn engine_early(
        &self,
        early: EarlyBackend,
    ) -> anyhow::Result<(Engine, Option<Arc<EngineLock>>)> {
        let Started {
            backend,
            state_dir,
            lock,
        } = early.started;
        self.engine_on(lock, state_dir, backend, Driving::Inline)
    }

    /// [`App::engine_early`] for a file whose first step changed between the two readings:
    /// the early sandbox goes unused, the lock is kept, and the backend is built again for the
    /// first step the deciding parse saw.
    pub fn engine_rebuilt(
        &self,
        early: EarlyBackend,
        first: Option<FirstStep>,
    ) -> anyhow::Result<(Engine, Option<Arc<EngineLock>>)> {
        let Started {
            backend,
            state_dir,
            lock,
        } = early.started;
        drop(backend);
        let backend = self.backend(first)?;
        self.engine_on(lock, state_dir, backend, Driving::Inline)
    }

    /// The engine over `backend`, which runs steps under the engine lock `lock`, after
    /// recovering what a crash left.
    fn engine_on(
        &self,
        lock: EngineLock,
        state_dir: RemoveStateDir,
        backend: Arc<dyn Isolation>,
        driving: Driving,
    ) -> anyhow::Result<(Engine, Option<Arc<EngineLock>>)> {
        let lock = Arc::new(lock);
        // The backend removes this data directory's cgroup parent when it goes: it must go
        // while the lock is still held, whichever of the engine and the lock is dropped first.
        // The backend drops first, then the state folder goes, then this clone of the lock.
        let backend: Arc<dyn Isolation> = Arc::new(worker::guards::Holding::new(
            backend,
            (state_dir, lock.clone()),
        ));
        let engine = self.engine_over(backend, driving)?;
        let report = engine
            .recover()
            .context("cannot recover interrupted runs")?;
        self.config.timings.mark("recovery of interrupted runs");
        for line in recovery_said(&report) {
            errln!("recovered after an interruption: {line}");
        }
        Ok((engine, Some(lock)))
    }

    /// The engine over `backend`, its waiting as `driving` says.
    fn engine_over(&self, backend: Arc<dyn Isolation>, driving: Driving) -> anyhow::Result<Engine> {
        // One client for the agent steps and the supervisor, made only if a model is called.
        let models = self.config.lazy_model_client();
        let models_for_repairs = models.clone();
        let views_dir = self.config.sandbox_state_dir().join("agent-views");
        worker::agent_view::sweep_views(&views_dir);
        let runtime = worker::agent_step::AgentRuntime {
            backend: backend.clone(),
            store: self.store.clone(),
            secrets: self.vault.clone(),
            client: models.clone(),
            helper: agent::helper::HelperCommand {
                program: std::env::current_exe().context("cannot find this program's path")?,
                args: vec![crate::FILE_TOOL_HELPER_ARG.to_owned()],
                user: rustix::process::geteuid()
                    .is_root()
                    .then_some((65534, 65534)),
            },
            views_dir,
            limits: sandbox::Limits::default(),
            maxima: self.config.limit_maxima,
        };
        let executor =
            SandboxExecutor::new(backend, self.scrub_sets.clone(), sandbox::Limits::default())
                .with_agents(Arc::new(runtime));
        let executor: Arc<dyn engine::StepExecutor> = match self.config.backend {
            // Counted before every attempt, not only at start: an account created beside a
            // running server must not get steps run without isolation (G13).
            Backend::Unisolated => Arc::new(worker::guards::OneAccountOnly {
                inner: executor,
                store: self.store.clone(),
            }),
            Backend::Local | Backend::Gvisor => Arc::new(executor),
        };
        // G15: the account's assistant sees failures; without a provider, a person does.
        let supervisor = Arc::new(worker::supervisor::ModelSupervisor {
            store: self.store.clone(),
            secrets: self.vault.clone(),
            scrub_sets: self.scrub_sets.clone(),
            client: models,
        });
        let mut options = self.engine_options();
        options.driving = driving;
        let engine = Engine::new(
            options,
            self.store.clone(),
            executor,
            self.scrub_sets.clone(),
            supervisor,
            Arc::new(SystemClock),
            Arc::new(RandomRunIds),
        )
        // G9: the account's assistant proposes repairs, each checked before it is shown and
        // again when a person accepts it, through any door.
        .with_repairs(Arc::new(worker::repair::ModelRepairs {
            store: self.store.clone(),
            secrets: self.vault.clone(),
            scrub_sets: self.scrub_sets.clone(),
            client: models_for_repairs,
            maxima: self.config.limit_maxima,
        }));
        Ok(engine)
    }

    /// Takes the data directory's engine lock alone: for commands that must not run beside a
    /// process driving runs (`stepward keys rotate-links` beside a live server).
    pub fn take_engine_lock(&self) -> anyhow::Result<EngineLock> {
        EngineLock::of_data_dir(&self.config.data_dir)
    }

    fn backend(&self, first: Option<FirstStep>) -> anyhow::Result<Arc<dyn Isolation>> {
        let accounts = match self.config.backend {
            Backend::Unisolated => self.store.accounts()?.len(),
            Backend::Local | Backend::Gvisor => 0,
        };
        let timings = self.config.timings.clone();
        crate::backend_setup::backend(&self.config, accounts, first, &mut |phase| {
            timings.mark(phase)
        })
    }
}

/// What recovery did, one sentence per run or step, with the commands a person types where
/// a run now waits for them.
fn recovery_said(report: &engine::RecoveryReport) -> Vec<String> {
    let mut said = Vec::new();
    for (run, step, attempt) in &report.marked_unknown {
        said.push(format!(
            "step {step} of run {run} (attempt {attempt}) was running with network access, so \
             its outcome is unknown and it is never run again by itself; decide with \
             `stepward runs retry {run} {step} --note \"why it is safe\"` or \
             `stepward runs stop {run} --note \"why\"`"
        ));
    }
    for (run, step, attempt) in &report.interrupted_offline {
        said.push(format!(
            "step {step} of run {run} (attempt {attempt}) was interrupted offline and runs again"
        ));
    }
    for (run, step, attempt) in &report.stopped_twice {
        said.push(format!(
            "step {step} of run {run} (attempt {attempt}) did not end: its worker stopped twice \
             while running this step, so no worker runs it again; decide with \
             `stepward runs retry {run} {step} --note \"why it is safe\"` or \
             `stepward runs stop {run} --note \"why\"`"
        ));
    }
    for run in &report.resumed {
        said.push(format!("run {run} goes on"));
    }
    for (run, reason) in &report.skipped {
        said.push(format!(
            "run {run} could not be recovered yet ({reason}); the next start tries again"
        ));
    }
    said
}

/// Data directories made before each account had a workspace of its own kept the local
/// account's working folder and history at `<data-dir>/workspace` and `<data-dir>/revisions`;
/// they move, once, to the local account's folder, so no file or revision is left behind.
fn move_single_account_workspace(config: &Config) -> anyhow::Result<()> {
    let local = config.accounts_dir().join(LOCAL_ACCOUNT_ID);
    for name in ["workspace", "revisions"] {
        let before = config.data_dir.join(name);
        let after = local.join(name);
        if before.is_dir() && after.exists() {
            errln!(
                "warning: {} is left as it is: the local account's {name} is {} now; move what \
                 you still need from the first into the second",
                before.display(),
                after.display()
            );
        } else if before.is_dir() {
            std::fs::create_dir_all(&local)
                .with_context(|| format!("cannot create {}", local.display()))?;
            std::fs::rename(&before, &after).with_context(|| {
                format!("cannot move {} to {}", before.display(), after.display())
            })?;
            errln!(
                "moved the local account's {name} from {} to {}",
                before.display(),
                after.display()
            );
        }
    }
    Ok(())
}

/// Milliseconds since the epoch, as storage timestamps are.
pub fn now() -> Timestamp {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis())
        .unwrap_or_default();
    Timestamp(i64::try_from(millis).unwrap_or(i64::MAX))
}

/// What the recovery of interrupted workspace writes did, for the person at the terminal:
/// nothing when there was nothing to do.
pub fn say_writes_recovered(done: &engine::workspace_writes::WritesRecovered) {
    if done.recorded > 0 {
        errln!(
            "recorded the outcome of {} workspace write(s) an earlier process left unfinished, \
             from the revision log (the audit log's workspace.write_recovered)",
            done.recorded
        );
    }
    for (account, why) in &done.failed {
        errln!(
            "warning: the unfinished workspace writes of account {account} could not be \
             settled ({why}); the next command tries again"
        );
    }
}

/// The operating-system user running this command, for the record of CLI decisions.
pub fn os_user() -> String {
    if let Ok(user) = std::env::var("USER")
        && !user.is_empty()
    {
        return user;
    }
    let uid = std::fs::metadata("/proc/self").map(|meta| {
        use std::os::unix::fs::MetadataExt;
        meta.uid()
    });
    match uid {
        Ok(uid) => user_name_of(uid).unwrap_or_else(|| format!("uid {uid}")),
        Err(_) => "unknown user".to_owned(),
    }
}

fn user_name_of(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id = fields.nth(1)?;
        (id.parse::<u32>().ok()? == uid).then(|| name.to_owned())
    })
}

/// The local account of a data directory that already has a database, read without the
/// vault, so without the root key (newcomer 3, friction 1): what `check` and `reach` need of
/// the account (its model providers' names, its workspace's agents) is in the store and the
/// workspace, in the clear.
pub struct AccountReader {
    pub store: Arc<SqliteStore>,
    pub account: AccountId,
    agents: PathBuf,
}

impl AccountReader {
    /// `None` when the data directory has no database: nothing is created.
    pub fn open_existing(config: &Config) -> anyhow::Result<Option<AccountReader>> {
        if !config.database_path().exists() {
            return Ok(None);
        }
        let store = Arc::new(SqliteStore::open(&config.database_path()).with_context(|| {
            format!(
                "cannot open the database {}",
                config.database_path().display()
            )
        })?);
        let account = AccountId::parse(LOCAL_ACCOUNT_ID).context("the local account id")?;
        let agents = config
            .accounts_dir()
            .join(account.as_str())
            .join("workspace")
            .join("agents");
        Ok(Some(AccountReader {
            store,
            account,
            agents,
        }))
    }

    /// The workspace's `agents/` folder, where `run` takes agents from.
    pub fn workspace_agents(&self) -> PathBuf {
        self.agents.clone()
    }
}

/// A folder as a person finds it: absolute (a relative `./stepward-data` names the folder it
/// was run from).
pub fn shown_path(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}
