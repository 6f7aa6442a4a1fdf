# Creates empty files until the filesystem refuses or the ceiling is reached.
import os


def main(folder, ceiling):
    created = 0
    refusal = None
    try:
        while created < ceiling:
            os.close(os.open(os.path.join(folder, "i%07d" % created),
                             os.O_WRONLY | os.O_CREAT, 0o644))
            created += 1
    except OSError as error:
        refusal = error.errno
    return {"created": created, "refusal": refusal}
