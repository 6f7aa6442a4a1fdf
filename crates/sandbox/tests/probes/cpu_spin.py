# Spins forever; only the sandbox's CPU or wall-clock limit can end it.
def main():
    counter = 0
    while True:
        counter += 1
