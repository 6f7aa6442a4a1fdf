# Shared by the syscall probes (prepended by the Rust test): raw syscall() through ctypes, so
# the probe reaches the kernel without any help (or hindrance) from Python's own wrappers.
import ctypes
import os

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.syscall.restype = ctypes.c_long


def raw_syscall(number, *arguments):
    """Returns (return value, errno name or None)."""
    converted = [ctypes.c_long(argument) if isinstance(argument, int) else argument
                 for argument in arguments]
    ctypes.set_errno(0)
    result = _LIBC.syscall(ctypes.c_long(number), *converted)
    error = ctypes.get_errno()
    if result == -1:
        import errno as errno_names
        return result, errno_names.errorcode.get(error, str(error))
    return result, None
