# A 32-bit system call through `int 0x80` from a 64-bit process: the kernel tags it with
# AUDIT_ARCH_I386, a foreign architecture for the filter, which must kill the process (not
# answer an errno, since i386 numbers mean other calls). Run in a forked child so the probe
# survives to report how the child ended. The machine code is: mov eax, 20 (i386 getpid);
# int 0x80; ret.
import ctypes
import mmap
import os
import signal

CODE = bytes([0xB8, 0x14, 0x00, 0x00, 0x00, 0xCD, 0x80, 0xC3])


def _child():
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(CODE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    function = ctypes.CFUNCTYPE(ctypes.c_long)(address)
    answer = function()
    # A positive answer is a pid: the 32-bit call reached the kernel and came back.
    os._exit(3 if answer > 0 else 4)


def main():
    child = os.fork()
    if child == 0:
        try:
            _child()
        finally:
            os._exit(5)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return {"signal": signal.Signals(number).name, "exit": None}
    return {"signal": None, "exit": os.WEXITSTATUS(status)}
