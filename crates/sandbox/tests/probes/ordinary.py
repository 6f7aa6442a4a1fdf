# What a normal container gives a program (issue 13, part 1): a working loopback, the sandbox
# user in /etc/passwd and /etc/group with /tmp as its home, localhost in /etc/hosts, and no
# HOME, USER or LOGNAME added to the environment.
import getpass
import grp
import http.server
import os
import pwd
import socket
import tarfile
import threading
import urllib.request


def _loopback_echo():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname(), timeout=5)
    accepted, _ = server.accept()
    client.sendall(b"ping")
    answer = accepted.recv(4)
    for each in (client, accepted, server):
        each.close()
    return answer.decode()


def _http_roundtrip():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"served on loopback"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *arguments):
            pass

    server = http.server.HTTPServer(("localhost", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        with urllib.request.urlopen("http://localhost:%d/" % port, timeout=5) as response:
            return response.read().decode()
    finally:
        server.shutdown()
        server.server_close()


def _tar_owner():
    with open("/tmp/member.txt", "w") as handle:
        handle.write("x")
    with tarfile.open("/tmp/archive.tar", "w") as archive:
        archive.add("/tmp/member.txt", arcname="member.txt")
    with tarfile.open("/tmp/archive.tar") as archive:
        member = archive.getmember("member.txt")
        return [member.uname, member.gname]


def main():
    entry = pwd.getpwuid(os.getuid())
    return {
        "loopback": _loopback_echo(),
        "ipv6_loopback": socket.has_ipv6 and _ipv6_loopback(),
        "http": _http_roundtrip(),
        "user": getpass.getuser(),
        "home": entry.pw_dir,
        "expanduser": os.path.expanduser("~"),
        "group": grp.getgrgid(os.getgid()).gr_name,
        "localhost": sorted({info[4][0] for info in socket.getaddrinfo("localhost", 80, socket.AF_INET)}),
        "tar_owner": _tar_owner(),
        "environment": sorted(os.environ),
    }


def _ipv6_loopback():
    try:
        server = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        server.bind(("::1", 0))
        server.close()
        return "bound"
    except OSError as error:
        return "error %s" % error.errno
