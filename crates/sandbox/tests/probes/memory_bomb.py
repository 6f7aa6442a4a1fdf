# Allocates and touches memory in 8 MiB pieces until something stops it.
def main(ceiling_mib):
    kept = []
    try:
        while len(kept) * 8 < ceiling_mib:
            kept.append(bytearray(8 * 1024 * 1024))
    except MemoryError:
        return {"allocated_mib": len(kept) * 8, "stopped_by": "MemoryError"}
    return {"allocated_mib": len(kept) * 8, "stopped_by": "ceiling"}
