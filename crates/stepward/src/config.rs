//! Configuration: command-line flags with environment fallbacks, read once into [`Config`] and
//! handed to each component as its own options (no globals).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use sha2::{Digest, Sha256};

/// Flags every command accepts, shown under their own heading after a command's own options
/// (newcomer 3, friction 14).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Options of every command")]
pub struct GlobalArgs {
    /// Where runs, the vault's ciphertexts and the workspace live.
    #[arg(
        long,
        env = "STEPWARD_DATA_DIR",
        default_value = "./stepward-data",
        global = true
    )]
    pub data_dir: PathBuf,
    /// Read the 32-byte root key (64 hex characters) from this file instead of the default
    /// file under your configuration directory.
    #[arg(
        long,
        env = "STEPWARD_ROOT_KEY_FILE",
        global = true,
        conflicts_with = "root_key_env"
    )]
    pub root_key_file: Option<PathBuf>,
    /// Read the root key (64 hex characters) from the environment variable with this name.
    #[arg(long, env = "STEPWARD_ROOT_KEY_ENV", global = true)]
    pub root_key_env: Option<String>,
    /// Where each step runs: `local` (a hardened sandbox on this machine, the default),
    /// `gvisor` (the same through runsc, a user-space kernel between the step and the host)
    /// or `unisolated` (a plain child process on this machine's own network: your laptop, your
    /// call; one account only).
    #[arg(long, env = "STEPWARD_BACKEND", value_enum, default_value_t = Backend::Local, global = true)]
    pub backend: Backend,
    /// The DNS resolver `public_egress` steps may use (port 53 only); it turns the egress
    /// network on. Without it `public_egress` steps are refused (`--egress-uplink` alone is
    /// refused at start): the network is never left open.
    #[arg(long, env = "STEPWARD_EGRESS_RESOLVER", global = true)]
    pub egress_resolver: Option<IpAddr>,
    /// The host interface `public_egress` traffic leaves through (masqueraded).
    #[arg(long, env = "STEPWARD_EGRESS_UPLINK", global = true)]
    pub egress_uplink: Option<String>,
    /// Where sandboxes keep their scratch folders and slot locks. It must be reachable by the
    /// sandboxes' unprivileged host ids, so by default it is not inside the data directory (which
    /// may sit in a private home folder) but `/run/stepward/<id of the data directory>`.
    #[arg(long, env = "STEPWARD_SANDBOX_STATE_DIR", global = true)]
    pub sandbox_state_dir: Option<PathBuf>,
    /// How many MiB each account's workspace history (its stored contents and log) may hold;
    /// a write beyond it is refused whole, so no account fills the disk for the others.
    #[arg(
        long,
        env = "STEPWARD_WORKSPACE_QUOTA_MIB",
        global = true,
        default_value_t = 1024,
        value_name = "MIB"
    )]
    pub workspace_quota_mib: u64,
    /// A model endpoint, `HOST:PORT`, that providers may reach although it is on this host or
    /// a private network, and over plain `http` (a local llama.cpp at `127.0.0.1:8081`, the
    /// fake model). Only the operator sets this; an account admin cannot. Repeat the flag, or
    /// separate endpoints with commas in the environment variable.
    #[arg(
        long = "allow-model-endpoint",
        env = "STEPWARD_ALLOW_MODEL_ENDPOINT",
        value_name = "HOST:PORT",
        value_delimiter = ',',
        global = true
    )]
    pub allow_model_endpoint: Vec<llm::Endpoint>,
    /// Reach no model endpoint but those of `--allow-model-endpoint` (a server whose models
    /// all run locally, or a test that must never reach the internet).
    #[arg(long, env = "STEPWARD_ONLY_EXEMPT_MODEL_ENDPOINTS", global = true)]
    pub only_exempt_model_endpoints: bool,
    /// The operator's configuration file, which may exempt model endpoints as
    /// `--allow-model-endpoint` does (`allow_model_endpoints = ["HOST:PORT"]`); default:
    /// `operator.toml` in stepward's configuration folder, when it exists. It must be outside
    /// the data directory and changeable by its owner alone.
    #[arg(
        long = "operator-config",
        env = "STEPWARD_OPERATOR_CONFIG",
        value_name = "FILE",
        global = true
    )]
    pub operator_config: Option<PathBuf>,
    /// Where runtime discovery keeps what it found (which host files every sandbox binds), so
    /// a command does not ask Python again on every start. Root's and 0700, outside the data
    /// directory; checked at every load and rebuilt when anything is off or Python changed.
    #[arg(
        long,
        env = "STEPWARD_RUNTIME_CACHE_DIR",
        global = true,
        default_value = "/var/cache/stepward/runtimes"
    )]
    pub runtime_cache_dir: PathBuf,
    /// Where the local backend keeps, between processes, what every sandbox shares and no
    /// account holds: the harness compiled for each Python and each runtime's linked view.
    /// Root's and closed to others (checked at every start; otherwise not used), on the same
    /// file system as the interpreter so its files can be linked. A `stepward run` then starts
    /// no compiler and links nothing.
    #[arg(
        long,
        env = "STEPWARD_SANDBOX_CACHE_DIR",
        global = true,
        default_value = "/var/cache/stepward-sandbox"
    )]
    pub sandbox_cache_dir: PathBuf,
    /// Sandboxes kept started and waiting, per kind of step (Python version, network, limits),
    /// for the local and the gvisor backend: a step then gets one already started (a gVisor
    /// step in tens of milliseconds instead of about 250). Each still serves one step and is
    /// destroyed after it, and holds nothing of any account until a step claims it. For
    /// `serve`; 0, the default, starts every step's sandbox when the step starts.
    #[arg(long, env = "STEPWARD_WARM_POOL", global = true, default_value_t = 0, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=16))]
    pub warm_pool: u8,
    /// Print how long each start-up phase took to stderr (for `scripts/bench`).
    #[arg(long, env = "STEPWARD_STARTUP_TIMINGS", global = true, hide = true)]
    pub startup_timings: bool,
    /// The largest `memory_mib` a step may declare in its `limits`.
    #[arg(long, env = "STEPWARD_MAX_STEP_MEMORY_MIB", global = true, default_value_t = spec::LimitMaxima::BUILT_IN.memory_mib, value_name = "MIB")]
    pub max_step_memory_mib: u64,
    /// The largest `timeout_s` (wall-clock seconds) a step may declare.
    #[arg(long, env = "STEPWARD_MAX_STEP_TIMEOUT_S", global = true, default_value_t = spec::LimitMaxima::BUILT_IN.timeout_s, value_name = "SECONDS")]
    pub max_step_timeout_s: u64,
    /// The largest `cpu_s` (CPU seconds) a step may declare.
    #[arg(long, env = "STEPWARD_MAX_STEP_CPU_S", global = true, default_value_t = spec::LimitMaxima::BUILT_IN.cpu_s, value_name = "SECONDS")]
    pub max_step_cpu_s: u64,
    /// The largest `output_kib` (printed output and result) a step may declare.
    #[arg(long, env = "STEPWARD_MAX_STEP_OUTPUT_KIB", global = true, default_value_t = spec::LimitMaxima::BUILT_IN.output_kib, value_name = "KIB")]
    pub max_step_output_kib: u64,
    /// The largest `work_mib` (size of `/work`) a step may declare.
    #[arg(long, env = "STEPWARD_MAX_STEP_WORK_MIB", global = true, default_value_t = spec::LimitMaxima::BUILT_IN.work_mib, value_name = "MIB")]
    pub max_step_work_mib: u64,
    /// The most model turns an agent file's `loop: { turns }` may declare.
    #[arg(long, env = "STEPWARD_MAX_AGENT_TURNS", global = true, default_value_t = spec::LimitMaxima::BUILT_IN.agent_turns, value_name = "TURNS")]
    pub max_agent_turns: u64,
    /// The most tokens an agent file's `loop: { tokens }` may declare.
    #[arg(long, env = "STEPWARD_MAX_AGENT_TOKENS", global = true, default_value_t = spec::LimitMaxima::BUILT_IN.agent_tokens, value_name = "TOKENS")]
    pub max_agent_tokens: u64,
    /// The longest `loop: { step_timeout_s }` (an agent step's wall-clock seconds) an agent
    /// file may declare; its `tool_timeout_s` is held to `--max-step-timeout-s` and to its own
    /// `step_timeout_s`.
    #[arg(long, env = "STEPWARD_MAX_AGENT_STEP_TIMEOUT_S", global = true, default_value_t = spec::LimitMaxima::BUILT_IN.agent_step_timeout_s, value_name = "SECONDS")]
    pub max_agent_step_timeout_s: u64,
    /// A NAT64 prefix of this host's network besides the well-known `64:ff9b::/96`
    /// (`2001:db8:64::/96`; /32 to /96 as RFC 6052 allows), denied to model endpoints whole:
    /// through it every IPv4 address, private ones too, can be written in IPv6. Repeat the
    /// flag, or separate prefixes with commas in the environment variable.
    #[arg(
        long = "deny-nat64-prefix",
        env = "STEPWARD_DENY_NAT64_PREFIX",
        value_name = "PREFIX",
        value_delimiter = ',',
        value_parser = llm::nat64_prefix,
        global = true
    )]
    pub deny_nat64_prefix: Vec<llm::Cidr>,
}

/// The sandbox backend a command uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    Local,
    Gvisor,
    Unisolated,
}

/// Everything the composition root reads, resolved into paths and choices.
#[derive(Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    pub root_key: vault::RootKeySource,
    pub backend: Backend,
    pub egress_resolver: Option<IpAddr>,
    pub egress_uplink: Option<String>,
    pub sandbox_state_dir: Option<PathBuf>,
    /// Each account's workspace history may hold at most this many bytes.
    pub workspace_quota_bytes: u64,
    /// The largest limits a step may declare (`--max-step-*`); every parse is held to them.
    pub limit_maxima: spec::LimitMaxima,
    /// Where runtime discovery's cache lives.
    pub runtime_cache_dir: PathBuf,
    /// Where the local backend keeps the compiled harness and the runtimes' views.
    pub sandbox_cache_dir: PathBuf,
    /// Sandboxes kept started per kind of step (`--warm-pool`).
    pub warm_pool: usize,
    /// The start-up phases' clock (prints only with `--startup-timings`).
    pub timings: std::sync::Arc<crate::timings::Timings>,
    /// Scrubs panic messages and the final error of every value this process holds (G16).
    pub scrub_registry: redact::ScrubRegistry,
    /// Which model endpoints providers may reach: the operator's exemptions (G11).
    pub model_endpoints: llm::EndpointPolicy,
    /// The operator file whose exemptions are in force, if one was read.
    pub operator_file: Option<PathBuf>,
    /// The platform's own addresses (`serve`'s listen address and public URL), denied to
    /// model endpoints and to `public_egress` steps even when public (G11).
    pub platform_addresses: Vec<IpAddr>,
}

impl Config {
    pub fn from_args(
        args: &GlobalArgs,
        scrub_registry: redact::ScrubRegistry,
        timings: std::sync::Arc<crate::timings::Timings>,
    ) -> Config {
        let root_key = match (&args.root_key_file, &args.root_key_env) {
            (Some(path), _) => vault::RootKeySource::File(path.clone()),
            (None, Some(name)) => vault::RootKeySource::Env(name.clone()),
            (None, None) => vault::RootKeySource::DefaultFile,
        };
        Config {
            data_dir: args.data_dir.clone(),
            root_key,
            backend: args.backend,
            egress_resolver: args.egress_resolver,
            egress_uplink: args.egress_uplink.clone(),
            sandbox_state_dir: args.sandbox_state_dir.clone(),
            workspace_quota_bytes: args.workspace_quota_mib.saturating_mul(1024 * 1024),
            limit_maxima: spec::LimitMaxima {
                memory_mib: args.max_step_memory_mib,
                timeout_s: args.max_step_timeout_s,
                cpu_s: args.max_step_cpu_s,
                output_kib: args.max_step_output_kib,
                work_mib: args.max_step_work_mib,
                agent_turns: args.max_agent_turns,
                agent_tokens: args.max_agent_tokens,
                agent_step_timeout_s: args.max_agent_step_timeout_s,
            },
            runtime_cache_dir: args.runtime_cache_dir.clone(),
            sandbox_cache_dir: args.sandbox_cache_dir.clone(),
            warm_pool: usize::from(args.warm_pool),
            timings,
            scrub_registry,
            platform_addresses: Vec::new(),
            operator_file: None,
            model_endpoints: llm::EndpointPolicy {
                exempt: args.allow_model_endpoint.clone(),
                public: if args.only_exempt_model_endpoints {
                    llm::PublicEndpoints::Refused
                } else {
                    llm::PublicEndpoints::Allowed
                },
                denied: args
                    .deny_nat64_prefix
                    .iter()
                    .map(|prefix| llm::ExtraRange {
                        range: *prefix,
                        why: "the operator's NAT64 prefix (--deny-nat64-prefix)".to_owned(),
                    })
                    .collect(),
            },
        }
    }

    /// Adds the exemptions of the operator's file (`--operator-config`, or the default one if it
    /// exists) to those of `--allow-model-endpoint`; refused as [`crate::operator_file::read`]
    /// says.
    pub fn read_operator_file(&mut self, explicit: Option<&std::path::Path>) -> anyhow::Result<()> {
        let Some(file) = crate::operator_file::read(explicit, &self.data_dir)? else {
            return Ok(());
        };
        let exempt = &mut self.model_endpoints.exempt;
        for endpoint in file.allow_model_endpoints {
            if !exempt.contains(&endpoint) {
                exempt.push(endpoint);
            }
        }
        self.operator_file = Some(file.path);
        Ok(())
    }

    /// For `stepward serve`: the platform's own addresses are denied to model endpoints and
    /// to `public_egress` steps, even when public (G11), so that neither a provider's base URL
    /// nor a step reaches the platform's own API: the listen address (unless it is unspecified, `0.0.0.0` or `[::]`: this host's
    /// addresses are denied at every check anyway) and every address the public URL's host
    /// resolves to now, at start. A public URL whose host does not resolve is an error: its
    /// addresses could not be denied.
    pub fn deny_platform_addresses(
        &mut self,
        listen: SocketAddr,
        public_url: Option<&llm::Url>,
        resolve: &dyn Fn(&str, u16) -> std::io::Result<Vec<IpAddr>>,
    ) -> anyhow::Result<()> {
        let denied = &mut self.model_endpoints.denied;
        if !listen.ip().is_unspecified() {
            self.platform_addresses.push(listen.ip());
            denied.push(llm::ExtraRange {
                range: listen.ip().into(),
                why: format!("the address this server listens on ({listen})"),
            });
        }
        let Some(url) = public_url else {
            return Ok(());
        };
        let host = url
            .host_str()
            .map(|host| host.trim_start_matches('[').trim_end_matches(']'))
            .with_context(|| format!("the public URL {url} has no host"))?;
        let port = url.port_or_known_default().unwrap_or(443);
        let addresses = match host.parse::<IpAddr>() {
            Ok(address) => vec![address],
            Err(_) => resolve(host, port).with_context(|| {
                format!(
                    "the public URL's host {host} does not resolve, so its addresses cannot be \
                     denied to model endpoints (the platform never calls itself); check --public-url and the resolver"
                )
            })?,
        };
        for address in addresses {
            self.platform_addresses.push(address);
            denied.push(llm::ExtraRange {
                range: address.into(),
                why: format!("an address of the platform's public URL ({host})"),
            });
        }
        Ok(())
    }

    /// The system's resolver, for [`Config::deny_platform_addresses`] at start.
    pub fn resolve_with_system(host: &str, port: u16) -> std::io::Result<Vec<IpAddr>> {
        use std::net::ToSocketAddrs;
        Ok((host, port)
            .to_socket_addrs()?
            .map(|address| address.ip())
            .collect())
    }

    /// The client every model call of this process goes through, held to the operator's
    /// endpoint rules.
    pub fn model_client(&self) -> anyhow::Result<llm::Client> {
        Ok(llm::Client::new(self.model_client_options())?)
    }

    /// [`Config::model_client`], built when a model is first called: a run whose steps call
    /// none never loads the host's root certificates.
    pub fn lazy_model_client(&self) -> worker::model_client::LazyModelClient {
        worker::model_client::LazyModelClient::new(self.model_client_options())
    }

    fn model_client_options(&self) -> llm::ClientOptions {
        llm::ClientOptions {
            endpoints: self.model_endpoints.clone(),
            ..llm::ClientOptions::default()
        }
    }

    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join("stepward.db")
    }

    /// Where `stepward serve` records the address it serves on (its `--public-url`, or the
    /// address it listens on), so the operator commands that print sign-in links print one that
    /// reaches it.
    pub fn server_url_path(&self) -> PathBuf {
        self.data_dir.join("server-url")
    }

    /// Every account's folder: its workflows, agents, working folder (what steps see at
    /// `/work`) and revision history (`accounts/<account>/{workflows,agents,workspace,revisions}`).
    pub fn accounts_dir(&self) -> PathBuf {
        self.data_dir.join("accounts")
    }

    /// Scratch folders, slot locks and other sandbox state; swept at start-up.
    pub fn sandbox_state_dir(&self) -> PathBuf {
        self.sandbox_state_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("/run/stepward").join(self.instance_id()))
    }

    /// A short id of this data directory, so that two data directories on one machine never
    /// share sandbox state, cgroups or host ids (and one's start-up sweep never touches the
    /// other's sandboxes).
    pub fn instance_id(&self) -> String {
        let path = std::fs::canonicalize(&self.data_dir).unwrap_or_else(|_| self.data_dir.clone());
        let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
        hex::encode(&digest[..6])
    }

    /// Which of 1,000 bands of host ids this data directory's sandboxes use, so that two data
    /// directories on one machine rarely share one (they share per-id process counts then).
    pub fn uid_band(&self) -> u32 {
        let instance = self.instance_id();
        u32::from_str_radix(&instance[..4], 16).unwrap_or_default() % 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        global: GlobalArgs,
    }

    fn config(flags: &[&str]) -> Config {
        let flags = Flags::try_parse_from(std::iter::once("stepward").chain(flags.iter().copied()))
            .unwrap();
        Config::from_args(
            &flags.global,
            redact::ScrubRegistry::default(),
            std::sync::Arc::new(crate::timings::Timings::new(false)),
        )
    }

    /// Names the test knows; no test resolves a name through the system.
    fn resolve(host: &str, _port: u16) -> std::io::Result<Vec<IpAddr>> {
        match host {
            "stepward.example.com" => Ok(vec![
                "198.100.1.7".parse().unwrap(),
                "2606:4700::6810:1".parse().unwrap(),
            ]),
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "not in the test's table",
            )),
        }
    }

    fn denied(config: &Config, address: &str) -> bool {
        let address: IpAddr = address.parse().unwrap();
        config
            .model_endpoints
            .denied
            .iter()
            .any(|range| range.range.contains(address))
    }

    #[test]
    fn g11_serve_denies_its_listen_address_and_its_public_urls_addresses_to_model_endpoints() {
        let mut config = config(&[]);
        let public: llm::Url = "https://stepward.example.com".parse().unwrap();
        config
            .deny_platform_addresses("198.100.1.9:8080".parse().unwrap(), Some(&public), &resolve)
            .unwrap();
        for address in ["198.100.1.7", "2606:4700::6810:1", "198.100.1.9"] {
            assert!(denied(&config, address), "{address} is not denied");
        }
        assert!(!denied(&config, "198.100.1.8"));
        // The client of the process refuses a provider at the public URL's address, and
        // says why.
        let client = config.model_client().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let url: llm::Url = "https://198.100.1.7/v1/chat/completions".parse().unwrap();
        match runtime.block_on(client.check_endpoint(&url)) {
            Err(llm::Error::EndpointRefused { reason, .. }) => {
                assert!(reason.contains("public URL"), "{reason}")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// The same addresses reach the egress policy as its platform endpoints: a step with
    /// `public_egress` cannot reach the platform's API at its public address either.
    #[test]
    fn g11_serve_denies_its_own_addresses_to_public_egress_steps_too() {
        let mut serve = config(&["--egress-resolver", "192.0.2.53"]);
        let public: llm::Url = "https://stepward.example.com".parse().unwrap();
        serve
            .deny_platform_addresses("198.100.1.9:8080".parse().unwrap(), Some(&public), &resolve)
            .unwrap();
        let options = crate::backend_setup::egress_settings(&serve)
            .unwrap()
            .unwrap();
        for address in ["198.100.1.7", "2606:4700::6810:1", "198.100.1.9"] {
            let address: IpAddr = address.parse().unwrap();
            assert!(
                options.platform_addresses.contains(&address),
                "{address} is not a platform endpoint: {:?}",
                options.platform_addresses
            );
        }
        // Without serve's addresses (`stepward run`), there are none to deny.
        let run = config(&["--egress-resolver", "192.0.2.53"]);
        let options = crate::backend_setup::egress_settings(&run)
            .unwrap()
            .unwrap();
        assert!(options.platform_addresses.is_empty());
    }

    #[test]
    fn g11_an_egress_uplink_without_a_resolver_is_refused_not_ignored() {
        let config = config(&["--egress-uplink", "eth0"]);
        let error = crate::backend_setup::egress_settings(&config).unwrap_err();
        let said = format!("{error:#}");
        assert!(said.contains("--egress-resolver"), "{said}");
        assert!(
            crate::backend_setup::egress_settings(&config_default())
                .unwrap()
                .is_none()
        );
    }

    fn config_default() -> Config {
        config(&[])
    }

    #[test]
    fn g11_the_operators_nat64_prefix_is_denied_to_model_endpoints() {
        let config = config(&["--deny-nat64-prefix", "2001:db8:64::/96"]);
        // 2001:db8:64::10.0.0.1 and 2001:db8:64::8.8.8.8: the prefix is denied whole.
        assert!(denied(&config, "2001:db8:64::a00:1"));
        assert!(denied(&config, "2001:db8:64::808:808"));
        assert!(!denied(&config, "2001:db8:65::a00:1"));
        for bad in [
            "10.0.0.0/8",
            "2001:db8:64::/33",
            "2001:db8:64::1/96",
            "nat64",
        ] {
            let error = Flags::try_parse_from(["stepward", "--deny-nat64-prefix", bad])
                .err()
                .unwrap_or_else(|| panic!("{bad} accepted"));
            assert!(error.to_string().contains("NAT64"), "{bad}: {error}");
        }
    }

    #[test]
    fn g11_an_unspecified_listen_address_adds_nothing_and_an_unresolvable_public_url_is_an_error() {
        let mut config = config(&[]);
        config
            .deny_platform_addresses("0.0.0.0:8080".parse().unwrap(), None, &resolve)
            .unwrap();
        assert!(config.model_endpoints.denied.is_empty());
        let unknown: llm::Url = "https://nowhere.example.com".parse().unwrap();
        let error = config
            .deny_platform_addresses("[::]:8080".parse().unwrap(), Some(&unknown), &resolve)
            .unwrap_err();
        assert!(
            format!("{error:#}").contains("nowhere.example.com"),
            "{error:#}"
        );
    }
}
