//! Network mode `none` (G11): only a loopback, no DNS, and the host's own loopback and
//! abstract sockets out of reach. Public egress belongs to the `net` tests.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};

use serde_json::json;

use crate::hostile::support::{Filter, Probe, report};

const PROBE: &str = include_str!("../../probes/network_none.py");

/// A listener on the host's loopback and one on a host abstract unix socket, both of which
/// the sandbox must never reach; the probe's report; and whether anything ever arrived.
struct HostListeners {
    tcp: TcpListener,
    abstract_socket: UnixListener,
    port: u16,
    abstract_name: String,
}

impl HostListeners {
    fn bind() -> HostListeners {
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        let port = tcp.local_addr().unwrap().port();
        let abstract_name = format!("stepward-hostile-{}-{port}", std::process::id());
        let address = SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        let abstract_socket = UnixListener::bind_addr(&address).unwrap();
        abstract_socket.set_nonblocking(true).unwrap();
        HostListeners {
            tcp,
            abstract_socket,
            port,
            abstract_name,
        }
    }

    fn probe(&self) -> serde_json::Value {
        let observation = Probe::new(
            PROBE,
            json!({ "port": self.port, "abstract_name": self.abstract_name }),
        )
        .run(Filter::Enforced);
        report(&observation)
    }

    fn nothing_arrived(&self) -> bool {
        self.tcp
            .accept()
            .is_err_and(|error| error.kind() == ErrorKind::WouldBlock)
            && self
                .abstract_socket
                .accept()
                .is_err_and(|error| error.kind() == ErrorKind::WouldBlock)
    }
}

#[test]
fn g11_network_none_has_only_a_loopback_needs_root() {
    let answer = HostListeners::bind().probe();
    assert_eq!(answer["proc_net_dev"], json!(["lo"]), "{answer}");
    assert!(
        answer["if_nameindex"] == json!(["lo"])
            || answer["if_nameindex"]
                .as_str()
                .is_some_and(|text| text.starts_with("error")),
        "{answer}"
    );
}

#[test]
fn g11_network_none_resolves_no_names_needs_root() {
    let answer = HostListeners::bind().probe();
    assert!(
        answer["resolve_public_name"]
            .as_str()
            .is_some_and(|text| text.starts_with("gaierror")),
        "a name resolved in network mode none: {answer}"
    );
}

#[test]
fn g11_network_none_cannot_reach_the_hosts_loopback_or_abstract_sockets_needs_root() {
    let listeners = HostListeners::bind();
    // The control: the listeners really accept connections from the host itself.
    let control = std::net::TcpStream::connect(("127.0.0.1", listeners.port)).unwrap();
    drop(control);
    assert!(
        listeners.tcp.accept().is_ok(),
        "the host listener must be reachable from the host"
    );

    let answer = listeners.probe();
    assert_ne!(answer["host_loopback"], "connected", "{answer}");
    assert_ne!(answer["host_abstract_socket"], "connected", "{answer}");
    assert!(
        listeners.nothing_arrived(),
        "a connection from the sandbox arrived on the host"
    );
}
