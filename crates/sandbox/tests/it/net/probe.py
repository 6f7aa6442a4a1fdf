"""The egress probe: run inside a sandbox's network namespace, it tries to reach every target it
is given, resolves names through the system resolver, and (on request) tries to change the
namespace's addresses, routes, links and nftables rules over netlink. Prints one JSON object.

Usage: python3 -I -S probe.py REQUEST_JSON_PATH, or as the code of a step (its inputs are the
request). It only ever contacts the addresses listed in the request (test namespaces).
"""

import concurrent.futures
import errno
import json
import socket
import struct
import sys


def connect(target, timeout):
    family = socket.AF_INET6 if target["family"] == "inet6" else socket.AF_INET
    kind = socket.SOCK_STREAM if target["proto"] == "tcp" else socket.SOCK_DGRAM
    try:
        sock = socket.socket(family, kind)
    except OSError as error:
        return "socket-error:" + errno.errorcode.get(error.errno, str(error.errno))
    sock.settimeout(timeout)
    try:
        if "source" in target:
            # A chosen source address (the spoofing tests run this as root of the namespace,
            # after adding the address to the veth).
            sock.bind((target["source"], 0))
        sock.connect((target["host"], target["port"]))
        if target["proto"] == "udp":
            sock.send(b"probe")
        reply = sock.recv(16)
        return "hit" if reply.startswith(b"hit") else "connected"
    except socket.timeout:
        return "connected" if target["proto"] == "tcp" and connected(sock) else "timeout"
    except ConnectionRefusedError:
        return "refused"
    except OSError as error:
        return "error:" + errno.errorcode.get(error.errno, str(error.errno))
    finally:
        sock.close()


def connected(sock):
    try:
        sock.getpeername()
        return True
    except OSError:
        return False


def resolve(name):
    try:
        answers = socket.getaddrinfo(name, 80, socket.AF_INET, socket.SOCK_STREAM)
        return sorted({answer[4][0] for answer in answers})
    except socket.gaierror as error:
        return "gaierror:" + str(error.errno)


NLMSG_ERROR = 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 1, 4, 0x200, 0x400


def attribute(kind, data):
    length = 4 + len(data)
    return struct.pack("=HH", length, kind) + data + b"\0" * ((4 - length % 4) % 4)


def message(kind, flags, sequence, body):
    return struct.pack("=IHHII", 16 + len(body), kind, flags, sequence, 0) + body


def exchange(protocol, messages, sequences):
    """Sends the messages; returns 'ok' or the errno name of the first error acknowledged."""
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, protocol)
    except OSError as error:
        return "socket-error:" + errno.errorcode.get(error.errno, str(error.errno))
    sock.settimeout(3)
    try:
        sock.bind((0, 0))
        sock.sendto(b"".join(messages), (0, 0))
        pending = set(sequences)
        while pending:
            data = sock.recv(65536)
            offset = 0
            while offset + 16 <= len(data):
                length, kind, _, sequence, _ = struct.unpack_from("=IHHII", data, offset)
                if kind == NLMSG_ERROR:
                    code = -struct.unpack_from("=i", data, offset + 16)[0]
                    if code != 0:
                        return errno.errorcode.get(code, str(code))
                    pending.discard(sequence)
                offset += (length + 3) & ~3
        return "ok"
    except OSError as error:
        return "socket-error:" + errno.errorcode.get(error.errno, str(error.errno))
    finally:
        sock.close()


def address_message(kind, flags, address, interface_index):
    body = struct.pack("=BBBBI", socket.AF_INET, 32, 0, 0, interface_index)
    body += attribute(2, socket.inet_aton(address)) + attribute(1, socket.inet_aton(address))
    return message(kind, flags, 1, body)


def route_message(kind, flags, destination, prefix_len, interface_index):
    # rtmsg: family, dst_len, src_len, tos, table main, protocol boot, scope, type unicast, flags.
    scope = 253 if kind == 24 else 255
    body = struct.pack("=BBBBBBBBI", socket.AF_INET, prefix_len, 0, 0, 254, 3, scope, 1, 0)
    if destination is not None:
        body += attribute(1, socket.inet_aton(destination))
    if interface_index is not None:
        body += attribute(4, struct.pack("=i", interface_index))
    return message(kind, flags, 1, body)


def link_down_message(interface_index):
    body = struct.pack("=BxHiII", socket.AF_UNSPEC, 0, interface_index, 0, 1)
    return message(16, NLM_F_REQUEST | NLM_F_ACK, 1, body)


def nft_table_batch(kind, flags, name):
    subsystem = socket.htons(10)
    begin = message(16, NLM_F_REQUEST, 1, struct.pack("=BBH", socket.AF_UNSPEC, 0, subsystem))
    table = message((10 << 8) | kind, NLM_F_REQUEST | NLM_F_ACK | flags, 2,
                    struct.pack("=BBH", 1, 0, 0) + attribute(1, name.encode() + b"\0"))
    end = message(17, NLM_F_REQUEST, 3, struct.pack("=BBH", socket.AF_UNSPEC, 0, subsystem))
    return [begin, table, end]


def interface_index(name):
    """The index of the named interface, or of the first one that is not the loopback. Read from
    /proc and through an ioctl: a sandbox's seccomp filter refuses netlink sockets, which
    socket.if_nameindex would need."""
    if not name:
        with open("/proc/self/net/dev") as devices:
            names = [line.split(":")[0].strip() for line in devices.readlines()[2:]]
        name = next((candidate for candidate in names if candidate != "lo"), "lo")
    try:
        return socket.if_nametoindex(name)
    except OSError:
        return 0


def try_changes(request):
    """Tries to change the namespace. With undo set (the control run, as host root) every change
    that succeeded is reverted at once."""
    create = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL
    undo = request.get("undo", False)
    veth = interface_index(request.get("veth"))
    results = {}
    results["add_address"] = exchange(0, [address_message(20, create, "192.0.2.200", 1)], [1])
    if undo and results["add_address"] == "ok":
        exchange(0, [address_message(21, NLM_F_REQUEST | NLM_F_ACK, "192.0.2.200", 1)], [1])
    results["add_route"] = exchange(0, [route_message(24, create, "192.0.2.201", 32, 1)], [1])
    if undo and results["add_route"] == "ok":
        exchange(0, [route_message(25, NLM_F_REQUEST | NLM_F_ACK, "192.0.2.201", 32, 1)], [1])
    if not undo:
        # Only the sandbox-side run tries the destructive changes; the control must not break
        # the namespace it shares with the rest of the test.
        results["delete_default_route"] = exchange(
            0, [route_message(25, NLM_F_REQUEST | NLM_F_ACK, None, 0, None)], [1])
        results["link_down"] = exchange(0, [link_down_message(veth)], [1])
    results["nft_new_table"] = exchange(12, nft_table_batch(0, NLM_F_CREATE, "swprobe"), [2])
    if undo and results["nft_new_table"] == "ok":
        exchange(12, nft_table_batch(2, 0, "swprobe"), [2])
    return results


def run(request):
    """Runs every check the request asks for; returns the report as a dict."""
    timeout = request.get("timeout", 1.5)
    targets = request.get("connect", [])
    report = {"connect": {}, "resolve": {}}
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        futures = {target["id"]: pool.submit(connect, target, timeout) for target in targets}
        for target_id, future in futures.items():
            report["connect"][target_id] = future.result()
    for name in request.get("resolve", []):
        report["resolve"][name] = resolve(name)
    if "netlink" in request:
        report["netlink"] = try_changes(request["netlink"])
    if request.get("gateway"):
        report["gateway"] = default_gateway()
    return report


def default_gateway():
    """The default route's gateway, from /proc/self/net/route (the namespace's own view)."""
    with open("/proc/self/net/route") as routes:
        for line in routes.readlines()[1:]:
            fields = line.split()
            if fields[1] == "00000000":
                return socket.inet_ntoa(struct.pack("<I", int(fields[2], 16)))
    return None


def main(**request):
    """Entry point when the probe runs as a real public_egress step."""
    return run(request)


if __name__ == "__main__":
    with open(sys.argv[1]) as request_file:
        print(json.dumps(run(json.load(request_file)), sort_keys=True))
