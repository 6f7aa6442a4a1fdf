# Pins kernel memory in socket buffers it never reads (sandbox review 3, F1): loopback TCP
# connections whose send and receive buffers are filled, or UDP receivers holding datagrams.
# Bounded: at most `ceiling_mib` queued and 100 sockets, each send loop a few tries, then it
# holds the memory for `hold_s` seconds and reports what the kernel says it queued.
import socket
import time


def queued_in_netns(kind):
    # rx_queue and tx_queue of every socket of this network namespace (hex, bytes).
    total = 0
    for line in open(f"/proc/self/net/{kind}").readlines()[1:]:
        queues = line.split()[4]
        tx, rx = queues.split(":")
        total += int(tx, 16) + int(rx, 16)
    return total


def tcp(ceiling, hold_s):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(128)
    pairs, sent, chunk = [], 0, b"x" * 65536
    error = None
    try:
        while sent < ceiling and len(pairs) < 100:
            client = socket.socket()
            client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 20)
            client.connect(server.getsockname())
            accepted, _ = server.accept()
            accepted.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
            client.setblocking(False)
            pairs.append((client, accepted))
            stalled = 0
            while sent < ceiling and stalled < 3:
                try:
                    sent += client.send(chunk)
                except BlockingIOError:
                    stalled += 1
                    time.sleep(0.01)
    except OSError as refused:
        error = f"{type(refused).__name__}: {refused}"
    queued = queued_in_netns("tcp")
    time.sleep(hold_s)
    return {"sockets": len(pairs) * 2, "sent_mib": sent >> 20, "queued_mib": queued >> 20, "error": error}


def udp(ceiling, hold_s):
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receivers, error = [], None
    payload = b"y" * 60000
    try:
        while len(receivers) < 100 and queued_in_netns("udp") < ceiling:
            receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
            receiver.bind(("127.0.0.1", 0))
            receivers.append(receiver)
            for _ in range(200):
                sender.sendto(payload, receiver.getsockname())
    except OSError as refused:
        error = f"{type(refused).__name__}: {refused}"
    queued = queued_in_netns("udp")
    time.sleep(hold_s)
    return {"sockets": len(receivers) + 1, "queued_mib": queued >> 20, "error": error}


def main(kind, ceiling_mib, hold_s):
    ceiling = ceiling_mib << 20
    return tcp(ceiling, hold_s) if kind == "tcp" else udp(ceiling, hold_s)
