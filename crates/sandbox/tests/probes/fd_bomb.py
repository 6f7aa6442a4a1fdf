# Opens /dev/null until the descriptor limit refuses.
import os


def main(ceiling):
    kept = []
    refusal = None
    try:
        while len(kept) < ceiling:
            kept.append(os.open("/dev/null", os.O_RDONLY))
    except OSError as error:
        refusal = error.errno
    count = len(kept)
    for descriptor in kept:
        os.close(descriptor)
    return {"opened": count, "refusal": refusal}
