"""fdleak.py — the fd-leak check of every test (tests/common/fdscan.h), for the Python
programs that are tests of their own (tests/control/demo_ctrl_c.py,
python/bench/bench_async.py)."""
import gc
import os


def open_fds():
    """This process's open fds and what each points to; the listing's own fd, closed
    by then, is left out."""
    fds = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            fds[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass
    return fds


def leaked_fds(before):
    """The fds open now that were not in before (open_fds()), as "fd -> target"."""
    gc.collect()  # what only a reference cycle still holds is not a leak
    return [f"{fd} -> {target}" for fd, target in sorted(open_fds().items())
            if before.get(fd) != target]
