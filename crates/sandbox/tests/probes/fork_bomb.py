# Forks until the kernel refuses; every child sleeps, so they all count at once.
import os
import time


def main(ceiling):
    children = 0
    refusal = None
    while children < ceiling:
        try:
            pid = os.fork()
        except OSError as error:
            refusal = error.errno
            break
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        children += 1
    return {"children": children, "refusal": refusal}
