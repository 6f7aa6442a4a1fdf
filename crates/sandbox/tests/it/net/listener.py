"""Test listener for the egress tests: binds TCP and UDP sockets on the given addresses inside a
test namespace, answers every connection or datagram with b"hit" and logs where it was reached.

Usage: python3 -I -S listener.py LOG_PATH SPEC... where SPEC is tcp:ADDRESS:PORT or
udp:ADDRESS:PORT (ADDRESS may be IPv6 in brackets). Prints "ready" once every socket is bound.
"""

import select
import socket
import sys


def parse(spec):
    proto, rest = spec.split(":", 1)
    address, port = rest.rsplit(":", 1)
    return proto, address.strip("[]"), int(port)


def main():
    log_path = sys.argv[1]
    sockets = {}
    for spec in sys.argv[2:]:
        proto, address, port = parse(spec)
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
        sock = socket.socket(family, kind)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        if proto == "tcp":
            sock.listen(64)
        sockets[sock.fileno()] = (proto, address, port, sock)
    print("ready", flush=True)
    with open(log_path, "a", buffering=1) as log:
        while True:
            readable, _, _ = select.select([entry[3] for entry in sockets.values()], [], [])
            for sock in readable:
                proto, address, port, _ = sockets[sock.fileno()]
                if proto == "tcp":
                    connection, peer = sock.accept()
                    # The local end names the address that was reached, also for a wildcard bind.
                    reached = connection.getsockname()[0]
                    log.write(f"{proto} {reached} {port} from {peer[0]}\n")
                    try:
                        connection.sendall(b"hit")
                    finally:
                        connection.close()
                else:
                    _, peer = sock.recvfrom(2048)
                    log.write(f"{proto} {address} {port} from {peer[0]}\n")
                    sock.sendto(b"hit", peer)


if __name__ == "__main__":
    main()
