# Writes 1 MiB pieces into a folder until the filesystem or the file-size limit refuses.
import os


def main(folder, ceiling_mib, mib_per_file):
    written = 0
    refusal = None
    piece = b"x" * (1024 * 1024)
    index = 0
    try:
        while written < ceiling_mib * 1024 * 1024:
            with open(os.path.join(folder, "fill-%d" % (index // mib_per_file)), "ab") as handle:
                handle.write(piece)
                handle.flush()
            written += len(piece)
            index += 1
    except OSError as error:
        refusal = error.errno
    return {"written_mib": written // (1024 * 1024), "refusal": refusal}
