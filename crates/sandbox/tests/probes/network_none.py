# In network mode none: which interfaces exist, whether names resolve, and whether the host's
# loopback listener (on `port`) or its abstract unix socket (`abstract_name`) can be reached.
import socket


def _connect_tcp(port):
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.settimeout(3)
    try:
        probe.connect(("127.0.0.1", port))
        return "connected"
    except OSError as error:
        return error.errno if error.errno is not None else type(error).__name__
    finally:
        probe.close()


def _connect_abstract(name):
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(3)
    try:
        probe.connect("\0" + name)
        return "connected"
    except OSError as error:
        return error.errno
    finally:
        probe.close()


def _resolve(name):
    try:
        return [entry[4][0] for entry in socket.getaddrinfo(name, 80)]
    except socket.gaierror as error:
        return "gaierror %s" % error.errno


def _interfaces():
    # glibc answers if_nameindex() through a netlink socket, which the sandbox refuses with an
    # errno: then /proc/self/net/dev is the only view, and the error is reported as such.
    try:
        return [name for _, name in socket.if_nameindex()]
    except OSError as error:
        return "error %s" % error.errno


def main(port, abstract_name):
    with open("/proc/self/net/dev") as handle:
        dev_lines = handle.read().splitlines()[2:]
    return {
        "if_nameindex": _interfaces(),
        "proc_net_dev": sorted(line.split(":")[0].strip() for line in dev_lines),
        "resolve_public_name": _resolve("example.com"),
        "host_loopback": _connect_tcp(port),
        "host_abstract_socket": _connect_abstract(abstract_name),
    }
