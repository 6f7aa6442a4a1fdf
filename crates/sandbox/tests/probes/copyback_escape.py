# Leaves behind, in /work, everything the copy-back filter must refuse, plus one honest file.
import base64
import os


def _attempt(action):
    try:
        action()
        return "succeeded"
    except OSError as error:
        return error.errno


def _write(path, data):
    with open(path, "wb") as handle:
        handle.write(data)


def main(oversize_bytes):
    secret = os.environ["PROBE_SECRET"].encode()
    cwd_at_start = os.getcwd()
    os.chdir("/work")
    work = os.getcwd()
    saw_secrets_file = os.path.exists(".secrets")
    report = {
        "saw_secrets_file": saw_secrets_file,
        "symlink": _attempt(lambda: os.symlink("/etc/passwd", "passwd-link")),
        "symlink_dir": _attempt(lambda: os.symlink("/", "root-link")),
        "hardlink": _attempt(lambda: (_write("original.txt", b"x"),
                                      os.link("original.txt", "hard-link.txt"))),
        "fifo": _attempt(lambda: os.mkfifo("a-fifo")),
        "device": _attempt(lambda: os.mknod("a-device", 0o20666, os.makedev(1, 3))),
        "setuid": _attempt(lambda: (_write("setuid-file", b"x"), os.chmod("setuid-file", 0o4755))),
        "oversize": _attempt(lambda: _write("oversize.bin", b"o" * oversize_bytes)),
        "traversal_relative": _attempt(lambda: _write("../escaped.txt", b"x")),
        "traversal_absolute": _attempt(lambda: _write(os.path.join(work, "..", "escaped2.txt"),
                                                      b"x")),
        "secrets_file": _attempt(lambda: _write(".secrets", b"STOLEN=1\n")),
        "journal": _attempt(lambda: (os.makedirs(".journal", exist_ok=True),
                                     _write(".journal/forged.json", b"{}"))),
        "secret_plain": _attempt(lambda: _write("plain-secret.txt", b"key=" + secret)),
        "secret_base64": _attempt(lambda: _write("encoded-secret.txt",
                                                 base64.b64encode(secret))),
        "honest": _attempt(lambda: _write("result.csv", b"a,b\n1,2\n")),
        "cwd_at_start": cwd_at_start,
    }
    return report
