# Prints far more than any output cap allows, on both streams.
import sys


def main(mib):
    line = "flood " * 170 + "\n"
    for _ in range(mib * 1024):
        sys.stdout.write(line)
        sys.stderr.write(line)
    return {"printed_mib": mib}
