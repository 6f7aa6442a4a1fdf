//! The endpoint is not a way into the platform's network (G11): every address a provider's
//! base URL resolves to is checked against the deny list before connecting, and the
//! connection then goes to exactly those addresses (no second resolution, so DNS rebinding
//! cannot change them). `https` is required; only the operator can exempt an endpoint.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::str::FromStr;
use std::time::Duration;

use netguard::{Cidr, ExtraRange};
use reqwest::Url;

use crate::error::Error;

/// An endpoint as the operator writes it: `HOST:PORT` (`127.0.0.1:8081`, `[::1]:8081`,
/// `llm.internal:443`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    host: Host,
    port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Host {
    Address(IpAddr),
    /// Lower case, without a trailing dot.
    Name(String),
}

impl Endpoint {
    fn matches(&self, host: &Host, port: u16) -> bool {
        self.port == port && &self.host == host
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Address(IpAddr::V6(address)) => write!(formatter, "[{address}]:{}", self.port),
            Host::Address(address) => write!(formatter, "{address}:{}", self.port),
            Host::Name(name) => write!(formatter, "{name}:{}", self.port),
        }
    }
}

/// A text that is not `HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not HOST:PORT ({reason}); write it like `127.0.0.1:8081` or `[::1]:8081`")]
pub struct EndpointParseError {
    pub text: String,
    pub reason: &'static str,
}

impl FromStr for Endpoint {
    type Err = EndpointParseError;

    fn from_str(text: &str) -> Result<Endpoint, EndpointParseError> {
        let invalid = |reason| EndpointParseError {
            text: text.to_owned(),
            reason,
        };
        let trimmed = text.trim();
        let bracketed = trimmed.starts_with('[');
        let (host_text, port_text) = if let Some(rest) = trimmed.strip_prefix('[') {
            let (address, after) = rest
                .split_once(']')
                .ok_or_else(|| invalid("an IPv6 address in brackets needs its `]`"))?;
            let port = after
                .strip_prefix(':')
                .ok_or_else(|| invalid("the port is missing"))?;
            (address, port)
        } else {
            trimmed
                .rsplit_once(':')
                .ok_or_else(|| invalid("the port is missing"))?
        };
        let port: u16 = port_text
            .parse()
            .map_err(|_| invalid("the port is not a number from 1 to 65535"))?;
        if port == 0 {
            return Err(invalid("the port is not a number from 1 to 65535"));
        }
        let host = if host_text.contains(':') && !bracketed {
            return Err(invalid("an IPv6 address must be written in brackets"));
        } else if let Ok(address) = host_text.parse::<IpAddr>() {
            Host::Address(address)
        } else {
            let name = host_text.trim_end_matches('.').to_ascii_lowercase();
            let plain = !name.is_empty()
                && name
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'.');
            if !plain {
                return Err(invalid("the host is not a name or an IP address"));
            }
            Host::Name(name)
        };
        Ok(Endpoint { host, port })
    }
}

/// Whether endpoints that are not exempted may be reached at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublicEndpoints {
    /// Public `https` endpoints may be reached (the default).
    Allowed,
    /// Only the exempted endpoints: a server whose models are all local, or a test.
    Refused,
}

/// Which endpoints a client may reach: set by the operator, never by an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointPolicy {
    /// `--allow-model-endpoint HOST:PORT`: reached even at a private address, over `http`
    /// too. Nothing else is ever exempt.
    pub exempt: Vec<Endpoint>,
    pub public: PublicEndpoints,
    /// Ranges denied on top of G11's list: the platform's API, database and object store.
    pub denied: Vec<ExtraRange>,
}

impl Default for EndpointPolicy {
    fn default() -> EndpointPolicy {
        EndpointPolicy {
            exempt: Vec::new(),
            public: PublicEndpoints::Allowed,
            denied: Vec::new(),
        }
    }
}

/// A resolution in progress.
pub type Resolving<'a> = Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// Turns a host name into addresses. The system's resolver in production; tests inject
/// their own so that no test needs DNS.
pub trait Resolve: Send + Sync {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> Resolving<'a>;
}

/// The system's resolver (`getaddrinfo` through tokio).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> Resolving<'a> {
        Box::pin(async move {
            let addresses = tokio::net::lookup_host((host, port)).await?;
            Ok(addresses.map(|address| address.ip()).collect())
        })
    }
}

/// A fixed table of names, for tests: a name not in it does not resolve.
#[derive(Debug, Default, Clone)]
pub struct StaticResolver {
    names: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    pub fn new() -> StaticResolver {
        StaticResolver::default()
    }

    /// `name` resolves to `addresses`.
    pub fn with(mut self, name: &str, addresses: &[IpAddr]) -> StaticResolver {
        self.names
            .insert(name.to_ascii_lowercase(), addresses.to_vec());
        self
    }
}

impl Resolve for StaticResolver {
    fn resolve<'a>(&'a self, host: &'a str, _port: u16) -> Resolving<'a> {
        let found = self.names.get(&host.to_ascii_lowercase()).cloned();
        Box::pin(async move {
            found.ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "the name is not in the resolver's table",
                )
            })
        })
    }
}

/// An endpoint that passed the check: where to connect, and nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checked {
    /// The URL's host as written (a name, or an address without brackets).
    pub(crate) host: String,
    /// Whether the host is an IP address (then nothing is resolved at all).
    pub(crate) is_address: bool,
    /// The checked addresses with the URL's port: the only ones connected to.
    pub(crate) addresses: Vec<SocketAddr>,
}

/// The host's own addresses, which no endpoint may resolve to (a provider URL pointing at
/// this host would reach the platform's own API). Read at every check: addresses change.
pub(crate) fn host_addresses() -> Result<Vec<ExtraRange>, String> {
    let interfaces = if_addrs::get_if_addrs().map_err(|error| error.to_string())?;
    Ok(interfaces
        .into_iter()
        .map(|interface| ExtraRange {
            range: Cidr::host(interface.ip()),
            why: format!("one of this host's own addresses ({})", interface.name),
        })
        .collect())
}

/// What the rules say of `url` before any name is resolved.
struct Parsed {
    host: Host,
    host_text: String,
    port: u16,
    exempt: bool,
    endpoint_words: String,
}

/// The checks of `url` that need no resolution: the scheme, no credentials in it, the
/// operator's exemptions, `https` unless exempt.
fn parse_checked(url: &Url, policy: &EndpointPolicy) -> Result<Parsed, Error> {
    let shown = url.as_str().to_owned();
    let invalid = |reason: &str| Error::InvalidBaseUrl {
        url: shown.clone(),
        reason: reason.to_owned(),
    };
    let refused = |reason: String| Error::EndpointRefused {
        url: shown.clone(),
        reason,
    };
    let scheme = url.scheme();
    if scheme != "https" && scheme != "http" {
        return Err(invalid("only `https://` URLs are used"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "it holds a user name or password, which would end up in logs; remove the \
             `user:password@` part (the key is stored apart, with `stepward models add`)",
        ));
    }
    let (host, host_text) = match url.host() {
        Some(url::Host::Ipv4(address)) => (Host::Address(IpAddr::V4(address)), address.to_string()),
        Some(url::Host::Ipv6(address)) => (Host::Address(IpAddr::V6(address)), address.to_string()),
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            (Host::Name(name.clone()), name)
        }
        None => return Err(invalid("it has no host")),
    };
    let port = url
        .port_or_known_default()
        .ok_or_else(|| invalid("it has no port"))?;
    let exempt = policy
        .exempt
        .iter()
        .any(|endpoint| endpoint.matches(&host, port));
    let endpoint_words = Endpoint {
        host: host.clone(),
        port,
    }
    .to_string();
    if !exempt {
        if policy.public == PublicEndpoints::Refused {
            return Err(refused(format!(
                "this server reaches only the model endpoints its operator exempted with \
                 --allow-model-endpoint, and {endpoint_words} is not one of them"
            )));
        }
        if scheme != "https" {
            return Err(refused(format!(
                "plain `http` sends the key unencrypted; use `https://`, or, for a server on \
                 your own machine or network, the operator exempts it with \
                 --allow-model-endpoint {endpoint_words}"
            )));
        }
    }
    Ok(Parsed {
        host,
        host_text,
        port,
        exempt,
        endpoint_words,
    })
}

/// Whether this process may reach `url` as far as that is known without resolving a name
/// (newcomer 3, friction 8: a run of an agent whose provider this process may not reach was
/// created and then failed): the checks before resolution, and for an address written in the
/// URL, the denied ranges. A name is resolved, and its addresses checked, when it is called.
pub fn check_unresolved(url: &Url, policy: &EndpointPolicy) -> Result<(), Error> {
    let parsed = parse_checked(url, policy)?;
    if parsed.exempt {
        return Ok(());
    }
    if let Host::Address(address) = parsed.host {
        let mut denied = policy.denied.clone();
        if let Ok(own) = host_addresses() {
            denied.extend(own);
        }
        if let Err(denial) = netguard::check(address, &denied) {
            return Err(Error::EndpointRefused {
                url: url.as_str().to_owned(),
                reason: format!(
                    "{denial}; a model endpoint must be a public address. For a server on this \
                     host or your own network, the operator exempts it with \
                     --allow-model-endpoint {}",
                    parsed.endpoint_words
                ),
            });
        }
    }
    Ok(())
}

/// Checks `url` against the policy, resolves it once, and checks every address.
pub(crate) async fn check(
    url: &Url,
    policy: &EndpointPolicy,
    resolver: &dyn Resolve,
    resolve_timeout: Duration,
) -> Result<Checked, Error> {
    let Parsed {
        host,
        host_text,
        port,
        exempt,
        endpoint_words,
    } = parse_checked(url, policy)?;
    let refused = |reason: String| Error::EndpointRefused {
        url: url.as_str().to_owned(),
        reason,
    };
    let addresses = match &host {
        Host::Address(address) => vec![*address],
        Host::Name(name) => {
            let resolved = tokio::time::timeout(resolve_timeout, resolver.resolve(name, port))
                .await
                .map_err(|_| Error::Resolve {
                    host: name.clone(),
                    detail: format!("no answer within {} s", resolve_timeout.as_secs()),
                })?
                .map_err(|error| Error::Resolve {
                    host: name.clone(),
                    detail: error.to_string(),
                })?;
            if resolved.is_empty() {
                return Err(Error::Resolve {
                    host: name.clone(),
                    detail: "it has no addresses".to_owned(),
                });
            }
            resolved
        }
    };
    if !exempt {
        let mut denied = policy.denied.clone();
        denied.extend(host_addresses().map_err(|detail| {
            refused(format!(
                "this host's own addresses cannot be listed ({detail}), so the endpoint cannot \
                 be checked against them"
            ))
        })?);
        for address in &addresses {
            if let Err(denial) = netguard::check(*address, &denied) {
                let subject = match &host {
                    Host::Address(_) => denial.to_string(),
                    Host::Name(name) => format!(
                        "`{name}` resolves to {address}, which is in {} ({})",
                        denial.range, denial.why
                    ),
                };
                return Err(refused(format!(
                    "{subject}; a model endpoint must be a public address. For a server on this \
                     host or your own network, the operator exempts it with \
                     --allow-model-endpoint {endpoint_words}"
                )));
            }
        }
    }
    Ok(Checked {
        host: host_text,
        is_address: matches!(host, Host::Address(_)),
        addresses: addresses
            .into_iter()
            .map(|address| SocketAddr::new(address, port))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_names_addresses_and_bracketed_ipv6() {
        let endpoint: Endpoint = "127.0.0.1:8081".parse().unwrap();
        assert_eq!(endpoint.to_string(), "127.0.0.1:8081");
        let endpoint: Endpoint = "[::1]:8081".parse().unwrap();
        assert_eq!(endpoint.to_string(), "[::1]:8081");
        let endpoint: Endpoint = "LLM.Internal.:443".parse().unwrap();
        assert_eq!(endpoint.to_string(), "llm.internal:443");
        for bad in [
            "127.0.0.1",
            "::1:80",
            "host:0",
            "host:x",
            ":80",
            "a b:80",
            "[::1]80",
        ] {
            assert!(bad.parse::<Endpoint>().is_err(), "{bad} accepted");
        }
    }
}
