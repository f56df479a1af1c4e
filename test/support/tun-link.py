"""
A point-to-point link between two network namespaces, for tests: a TUN device in this process's namespace
and one in another (named by a /proc/PID/ns/net path), and this process copying packets between them. veth
would do the same in the kernel, but needs a module not every machine has; TUN is always there.

    python3 tun-link.py HERE_NAME /proc/PID/ns/net THERE_NAME
Prints "ready" once both devices exist; runs until killed or its parent is gone.
"""
import ctypes
import fcntl
import os
import errno
import select
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


here_name, there_path, there_name = sys.argv[1:4]
here = tun(here_name)
namespace = os.open(there_path, os.O_RDONLY)
if libc.setns(namespace, CLONE_NEWNET) != 0:
    raise OSError(ctypes.get_errno(), "setns " + there_path)
there = tun(there_name)
parent = os.getppid()
print("ready", flush=True)
while os.getppid() == parent:
    for fd in select.select([here, there], [], [], 1)[0]:
        try:
            os.write(there if fd == here else here, os.read(fd, 65536))
        except OSError as error:
            # A device that is not up yet reads and writes EIO (and select calls it readable): wait for it.
            if error.errno != errno.EIO:
                raise
            time.sleep(0.05)
