"""A tiny DNS responder for the egress tests, run inside the test "internet" namespace.

Usage: python3 -I -S dns_responder.py LOG_PATH ADDRESS NAME A_ADDRESS...
Answers A queries for NAME with every A_ADDRESS (UDP and TCP, port 53), AAAA queries for NAME
with no records, and anything else with NXDOMAIN. Logs each query. Prints "ready" once bound.
"""

import select
import socket
import struct
import sys


def parse_question(message):
    position = 12
    labels = []
    while True:
        length = message[position]
        position += 1
        if length == 0:
            break
        labels.append(message[position:position + length].decode("ascii").lower())
        position += length
    qtype, qclass = struct.unpack("!HH", message[position:position + 4])
    return ".".join(labels), qtype, qclass, message[12:position + 4]


def answer(message, name, addresses):
    (query_id, flags) = struct.unpack("!HH", message[:4])
    qname, qtype, _, question = parse_question(message)
    recursion_desired = flags & 0x0100
    if qname == name and qtype in (1, 28):
        records = addresses if qtype == 1 else []
        rcode = 0
    else:
        records = []
        rcode = 3
    header = struct.pack("!HHHHHH", query_id, 0x8000 | 0x0400 | recursion_desired | 0x0080 | rcode,
                         1, len(records), 0, 0)
    body = b""
    for address in records:
        body += struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(address)
    return qname, qtype, header + question + body


def main():
    log_path, address, name = sys.argv[1], sys.argv[2], sys.argv[3].lower()
    addresses = sys.argv[4:]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((address, 53))
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind((address, 53))
    tcp.listen(16)
    print("ready", flush=True)
    with open(log_path, "a", buffering=1) as log:
        while True:
            readable, _, _ = select.select([udp, tcp], [], [])
            if udp in readable:
                message, peer = udp.recvfrom(4096)
                try:
                    qname, qtype, reply = answer(message, name, addresses)
                except (struct.error, IndexError, UnicodeDecodeError) as error:
                    log.write(f"udp {address} 53 from {peer[0]} error {error}\n")
                    continue
                log.write(f"udp {address} 53 from {peer[0]} {qname} {qtype}\n")
                udp.sendto(reply, peer)
            if tcp in readable:
                connection, peer = tcp.accept()
                connection.settimeout(2)
                try:
                    length = struct.unpack("!H", connection.recv(2))[0]
                    message = b""
                    while len(message) < length:
                        chunk = connection.recv(length - len(message))
                        if not chunk:
                            break
                        message += chunk
                    qname, qtype, reply = answer(message, name, addresses)
                    log.write(f"tcp {address} 53 from {peer[0]} {qname} {qtype}\n")
                    connection.sendall(struct.pack("!H", len(reply)) + reply)
                except (OSError, struct.error, IndexError, UnicodeDecodeError) as error:
                    log.write(f"tcp {address} 53 from {peer[0]} error {error}\n")
                finally:
                    connection.close()


if __name__ == "__main__":
    main()
