//! What every request handler shares: the store, the engine (and its live scrub sets), the clock, the CSRF key, the sign-in rate limiters and the options.

use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};

use auth::{ApproveLinkKey, CsrfKey, KeyRing, RateLimit, RateLimiter, SessionLifetime, TlsMode};
use engine::{Clock, Engine};
use storage::interviews::InterviewStore;
use storage::mail::GateMailOutbox;
use storage::models::ModelProviderStore;
use storage::people::PeopleStore;
use storage::{Store, Timestamp};
use vault::Vault;

use crate::WorkflowSource;
use crate::password_work::{PasswordHashing, PasswordWork};

/// Everything the server needs from storage: the engine's traits, people and model providers.
pub trait ServerStore:
    Store + PeopleStore + ModelProviderStore + InterviewStore + GateMailOutbox
{
}

impl<T: Store + PeopleStore + ModelProviderStore + InterviewStore + GateMailOutbox> ServerStore
    for T
{
}

/// The server's settings, handed in by the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppOptions {
    /// Whether clients reach the server over TLS: decides the session cookie's `Secure`
    /// attribute and `__Host-` name.
    pub tls: TlsMode,
    /// How long a session lives without a request, and at most.
    pub session_lifetime: SessionLifetime,
    /// The sign-in limit per account and remote address.
    pub sign_in_limit: RateLimit,
    /// The sign-in limit per account alone, against guessing spread over many addresses:
    /// spent by failed password checks only, and an address with no recent failures for the
    /// account still gets its try when it is spent (nobody can lock an account out).
    pub account_sign_in_limit: RateLimit,
    /// The sign-in limit per remote address alone, against one address trying many accounts
    /// (each failure is an audit entry).
    pub address_sign_in_limit: RateLimit,
    /// The limit per remote address of every route that needs no sign-in.
    pub unauthenticated_limit: RateLimit,
    /// The limit per remote address of setting a password through a one-time link.
    pub welcome_limit: RateLimit,
    /// How many password hashes and checks run at once, and how many may wait.
    pub password_hashing: PasswordHashing,
    /// How long an answer "too many requests" to a client that is not signed in is held back,
    /// in milliseconds: a flooding connection then sends a request every so often instead of
    /// as fast as the server answers (connections per address are capped by the listener).
    pub refusal_delay_millis: u64,
    /// How long a new share link works, in milliseconds.
    pub share_link_lifetime_millis: i64,
    /// How long a one-time sign-in link of an invited person works, in milliseconds.
    pub sign_in_link_lifetime_millis: i64,
    /// How large a form body the CSRF check reads, in bytes; larger forms are refused.
    pub max_form_bytes: usize,
    /// The reverse proxy in front, if any: a request whose connection comes from this address
    /// is taken to come from the last address the proxy appended to `X-Forwarded-For`, for
    /// the sign-in limits and the audit. No other peer's `X-Forwarded-For` is ever read.
    pub trusted_proxy: Option<std::net::IpAddr>,
    /// Whether the server's steps run in sandboxes. `false` for `--backend unisolated`: every
    /// reach panel then says the steps are not isolated (what a step declares is not enforced).
    pub steps_isolated: bool,
}

/// How the steps of the server's engine run: every caller that builds the server says it, so
/// none can leave a server of unisolated steps showing reach panels without the notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepIsolation {
    /// In sandboxes: what a step declares is enforced.
    Sandboxed,
    /// Plain processes (`--backend unisolated`): every reach panel says so.
    NotIsolated,
}

impl AppOptions {
    /// The defaults for a server reached with `tls`: the default session lifetime, 5 sign-in
    /// attempts per account and address then one per 12 s, 50 per account then one per 2 s,
    /// 20 per address then one per 3 s; every route that needs no sign-in 300 requests per
    /// address then 20 a second, the welcome form 10 per address then one per 6 s; password
    /// checks as many at once as there are cores ([`PasswordHashing::for_this_machine`]);
    /// refusals of clients without a session held back half a second;
    /// share links for 7 days, sign-in links for 72 hours, forms up to 64 KiB; and the
    /// steps' isolation as the caller says.
    pub fn new(tls: TlsMode, steps: StepIsolation) -> AppOptions {
        AppOptions {
            tls,
            session_lifetime: SessionLifetime::DEFAULT,
            sign_in_limit: RateLimit::SIGN_IN,
            account_sign_in_limit: RateLimit {
                burst: 50,
                refill_every_millis: 2_000,
                max_keys: 100_000,
            },
            address_sign_in_limit: RateLimit {
                burst: 20,
                refill_every_millis: 3_000,
                max_keys: 100_000,
            },
            unauthenticated_limit: RateLimit::UNAUTHENTICATED,
            welcome_limit: RateLimit::WELCOME,
            password_hashing: PasswordHashing::for_this_machine(),
            refusal_delay_millis: 500,
            share_link_lifetime_millis: 7 * 24 * 60 * 60 * 1000,
            sign_in_link_lifetime_millis: 72 * 60 * 60 * 1000,
            max_form_bytes: 64 * 1024,
            trusted_proxy: None,
            steps_isolated: steps == StepIsolation::Sandboxed,
        }
    }
}

/// The server's own keys, each from its own key file and never a vault key: the CSRF key of
/// the console's forms and the approve-link signing key.
pub struct ServerKeys {
    pub csrf: CsrfKey,
    pub approve_links: KeyRing,
}

/// What the server runs over. The engine runs over the same store, and its live scrub sets
/// (every account's values, from the vault) scrub every answer, audit detail and workspace
/// read of the server; `vault` manages names and values for the vault routes (`None`: those
/// routes answer "not available"); `clock` gives every time the server records and compares.
pub struct Backends {
    pub store: Arc<dyn ServerStore>,
    pub engine: Arc<Engine>,
    pub vault: Option<Arc<Vault>>,
    /// The accounts' workflows and agents (`None`: the workflow routes answer "not
    /// available").
    pub workflows: Option<Arc<dyn WorkflowSource>>,
    pub clock: Arc<dyn Clock>,
    /// The client model calls go through, held to the operator's endpoint rules (`None`: the
    /// model routes that call a model answer "not available").
    pub models: Option<llm::Client>,
}

/// The shared state of the router. Cheap to clone (an `Arc` inside).
#[derive(Clone)]
pub struct AppState {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Shared {
    pub(crate) options: AppOptions,
    pub(crate) store: Arc<dyn ServerStore>,
    pub(crate) engine: Arc<Engine>,
    pub(crate) vault: Option<Arc<Vault>>,
    pub(crate) workflows: Option<Arc<dyn WorkflowSource>>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) models: Option<llm::Client>,
    pub(crate) csrf_key: CsrfKey,
    approve_links: RwLock<KeyRing>,
    sign_in_limiter: Mutex<RateLimiter>,
    account_sign_in_limiter: Mutex<RateLimiter>,
    address_sign_in_limiter: Mutex<RateLimiter>,
    unauthenticated_limiter: Mutex<RateLimiter>,
    welcome_limiter: Mutex<RateLimiter>,
    pub(crate) password_work: PasswordWork,
    /// The counts of refused attempts held between writes (`tallies.rs`).
    pub(crate) refusals: crate::tallies::Refusals,
    /// The interviews in progress (`interviews.rs`).
    pub(crate) interviews: crate::interviews::Interviews,
    /// The authoring lints a proposal is shown with, when the binary handed them in.
    pub(crate) authoring_lints: std::sync::OnceLock<Arc<dyn crate::AuthoringLints>>,
    /// The server's address as people reach it (`--public-url`, else the listening address):
    /// the console shows invite, approve and share links whole, with a copy button.
    pub(crate) public_base: std::sync::OnceLock<String>,
}

impl AppState {
    /// The state of the router over `backends`, with the server's own `keys`.
    pub fn new(options: AppOptions, backends: Backends, keys: ServerKeys) -> AppState {
        AppState {
            shared: Arc::new(Shared {
                options,
                store: backends.store,
                engine: backends.engine,
                vault: backends.vault,
                workflows: backends.workflows,
                clock: backends.clock,
                models: backends.models,
                csrf_key: keys.csrf,
                approve_links: RwLock::new(keys.approve_links),
                sign_in_limiter: Mutex::new(RateLimiter::new(options.sign_in_limit)),
                account_sign_in_limiter: Mutex::new(RateLimiter::new(
                    options.account_sign_in_limit,
                )),
                address_sign_in_limiter: Mutex::new(RateLimiter::new(
                    options.address_sign_in_limit,
                )),
                unauthenticated_limiter: Mutex::new(RateLimiter::new(
                    options.unauthenticated_limit,
                )),
                welcome_limiter: Mutex::new(RateLimiter::new(options.welcome_limit)),
                password_work: PasswordWork::new(options.password_hashing),
                refusals: crate::tallies::Refusals::default(),
                interviews: crate::interviews::Interviews,
                authoring_lints: std::sync::OnceLock::new(),
                public_base: std::sync::OnceLock::new(),
            }),
        }
    }
}

impl AppState {
    /// The authoring lints an interview's proposals are shown with (`stepward check`'s
    /// warnings, which read code with the machine's Python); without them a proposal says its
    /// lints were not run. Set once; a second call changes nothing.
    pub fn set_authoring_lints(&self, lints: Arc<dyn crate::AuthoringLints>) {
        let _ = self.shared.authoring_lints.set(lints);
    }

    /// The server's address as people reach it (`https://stepward.example.com`): links the
    /// console shows start with it. Set once; a second call changes nothing.
    pub fn set_public_base(&self, base: &str) {
        let _ = self
            .shared
            .public_base
            .set(base.trim_end_matches('/').to_owned());
    }

    /// The path of the approve link of a gate as the engine derives it
    /// ([`engine::Engine::pending_gate`]): `/approve/{run}/{step}/{attempt}/{token}`, signed
    /// with the current key. Opening it only shows the decision page; deciding is a POST by a
    /// signed-in member.
    pub fn approve_link_path(&self, gate: &storage::GateRef) -> Result<String, crate::Error> {
        crate::handlers::approve::link_path(&self.shared, gate)
    }

    /// Replaces the approve-link signing key: every link made under the old key stops working
    /// at once. The caller stores the new key file first and audits the rotation.
    pub fn rotate_approve_link_key(&self, new_key: ApproveLinkKey) {
        self.shared
            .approve_links
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .rotate(new_key);
    }
}

impl Shared {
    pub(crate) fn approve_links(&self) -> RwLockReadGuard<'_, KeyRing> {
        // The ring holds one key and is replaced whole, so a poisoned lock still holds a
        // complete ring.
        self.approve_links
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `path` as a whole address people can open, when the server knows its own; else the
    /// path as it is.
    pub(crate) fn full_url(&self, path: &str) -> String {
        match self.public_base.get() {
            Some(base) => format!("{base}{path}"),
            None => path.to_owned(),
        }
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The clock as the rate limiters want it; a time before the epoch counts as zero.
    pub(crate) fn now_millis(&self) -> u64 {
        u64::try_from(self.clock.now().0).unwrap_or(0)
    }

    pub(crate) fn sign_in_limiter(&self) -> MutexGuard<'_, RateLimiter> {
        // A panic while holding the limiter leaves its buckets as they were; they are still
        // a valid limit, so a poisoned lock is taken over.
        self.sign_in_limiter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn account_sign_in_limiter(&self) -> MutexGuard<'_, RateLimiter> {
        self.account_sign_in_limiter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn address_sign_in_limiter(&self) -> MutexGuard<'_, RateLimiter> {
        self.address_sign_in_limiter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn unauthenticated_limiter(&self) -> MutexGuard<'_, RateLimiter> {
        self.unauthenticated_limiter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn welcome_limiter(&self) -> MutexGuard<'_, RateLimiter> {
        self.welcome_limiter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
