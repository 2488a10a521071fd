#!/usr/bin/env python3
"""demo_ctrl_c.py — scripts/demo.sh stopped by Ctrl-C, as the README says to stop it.

Runs the demo's interactive path (stdout a terminal: a pseudo-terminal here, so no
DEMO_SECONDS and a live `garctl top`) on the binaries of this build (DEMO_NO_BUILD=1),
waits until garudad is up and top has drawn a frame, types ^C on the terminal (the
kernel sends SIGINT to the foreground process group, as a real Ctrl-C), and checks
that the demo calls that its normal end: exit status 0, no "something failed", the
workloads' figures printed with garctl's under each (as the README promises), its
runtime directory removed and garudad gone.
(Issue "First hour, round 2", item 13: the INT trap ran the cleanup before the line
after `garctl top` recorded the run as good, so every Ctrl-C said "something failed"
and kept the runtime directory; and the terminal's SIGINT stopped garudad and the
workloads before garctl could sample them, so garctl's figures were never printed.)
After the last frame of top come the legend and the load average (issue 30, item 13:
printed only before top cleared the screen, they were left in scrollback). Then the
bounded run (no terminal, DEMO_SECONDS) on a busy machine (DEMO_LOADAVG: a load above
the CPUs): after its last frame, the legend, the load and the note that it is busy.
Last, that this process leaked no fd (its fds at the end are those at the start).

    demo_ctrl_c.py SOURCE_ROOT BUILD_ROOT
"""
import errno
import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from fdleak import leaked_fds, open_fds  # noqa: E402  (tests/common)

DEADLINE_UP_S = 60  # garudad up, a first frame of top
DEADLINE_END_S = 60  # after ^C: the demo's cleanup done


def after_last_frame(out):
    """What follows the last frame of garctl top (its tables' COMPL/S header; the
    legend's "COMPL/S completions per second" is not a frame), or None."""
    frames = [m.end() for m in re.finditer(r"COMPL/S(?! completions)", out)]
    return out[frames[-1]:] if frames else None


def fail(msg, out):
    sys.stderr.write("FAIL: %s\n--- the demo's output:\n%s\n" % (msg, out))
    sys.exit(1)


def main():
    fds_before = open_fds()
    src, build = sys.argv[1], sys.argv[2]
    env = {k: v for k, v in os.environ.items()
           if k not in ("DEMO_SECONDS", "GARUDA_SOCKET", "GARUDA_CONTROL_SOCKET",
                        "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_FDNAMES")}
    env.update(BUILD_DIR=build, DEMO_NO_BUILD="1", DEMO_CLIENTS="2", DEMO_STREAMS="2",
               TERM="xterm", GARUDAD_DEFAULT_CONFIG="")
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execvpe("bash", ["bash", os.path.join(src, "scripts", "demo.sh")], env)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))

    buf = bytearray()

    def read_some(timeout):
        """Read what the terminal has; False at its end (every writer gone)."""
        r, _, _ = select.select([fd], [], [], timeout)
        if not r:
            return True
        try:
            data = os.read(fd, 65536)
        except OSError as e:
            if e.errno == errno.EIO:
                return False
            raise
        if not data:
            return False
        buf.extend(data)
        return True

    def text():
        return buf.decode("utf-8", "replace")

    # up: garudad announced, the workloads started, and top drew a frame (its
    # client table's header) after the announcement
    rt = None
    end = time.monotonic() + DEADLINE_UP_S
    open_ = True
    while time.monotonic() < end and open_:
        open_ = read_some(0.2)
        m = re.search(r"demo: garudad pid (\d+) on (\S+);", text())
        if m:
            rt = m.group(2)
            after = text()[m.end():]
            if "COMPL/S" in after and "CLIENT" in after:
                break
    if rt is None or not open_ or time.monotonic() >= end:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        fail("the demo did not come up (garudad announced and a frame of garctl top)", text())
    daemon_pid = int(re.search(r"demo: garudad pid (\d+)", text()).group(1))
    if not os.path.isdir(rt):
        fail("the runtime directory %s is not there while the demo runs" % rt, text())
    # a second frame of top: the workloads run and top redraws (an event, not a time)
    frames = text().count("COMPL/S")
    end = time.monotonic() + DEADLINE_UP_S
    while time.monotonic() < end and text().count("COMPL/S") <= frames and read_some(0.2):
        pass

    mark = len(buf)
    os.write(fd, b"\x03")  # Ctrl-C: ISIG turns it into SIGINT for the foreground group
    end = time.monotonic() + DEADLINE_END_S
    while time.monotonic() < end and read_some(0.2):
        pass
    # the terminal closed (or the deadline passed): wait for the shell's exit on its
    # pidfd, for what is left of the deadline
    pidfd = os.pidfd_open(pid)
    select.select([pidfd], [], [], max(0.0, end - time.monotonic()))
    os.close(pidfd)
    done, status = os.waitpid(pid, os.WNOHANG)
    if not done:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        fail("the demo did not end within %d s of Ctrl-C" % DEADLINE_END_S, text())
    os.close(fd)
    out = text()
    tail = buf[mark:].decode("utf-8", "replace")

    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        fail("exit status %s after Ctrl-C, not 0" % (
            os.WEXITSTATUS(status) if os.WIFEXITED(status) else
            "signal %d" % os.WTERMSIG(status)), out)
    if "something failed" in out:
        fail("Ctrl-C was reported as a failure", out)
    if "stopped by Ctrl-C" not in tail:
        fail("the demo does not say that Ctrl-C stopped it", out)
    if "workload[" not in tail:
        fail("the workloads' figures are not printed", out)
    if "garctl clients, pid" not in tail:
        fail("garctl's figures are not printed under the workloads' (garudad or the "
             "workloads ended on the terminal's SIGINT before garctl sampled them?)", out)
    after_top = after_last_frame(out)
    for what in ("Legend (garctl top)", "Baseline:", "Load average: "):
        if what not in after_top:
            fail("no '%s' after the last frame of garctl top" % what, out)
    if os.path.exists(rt):
        fail("the runtime directory %s was left behind" % rt, out)
    try:
        os.kill(daemon_pid, 0)
        fail("garudad (pid %d) still runs" % daemon_pid, out)
    except ProcessLookupError:
        pass
    print("ok: Ctrl-C ended the demo with exit 0, figures printed, %s removed" % rt)
    bounded(src, env)
    leaked = leaked_fds(fds_before)
    if leaked:
        fail("this process leaked fds: %s" % ", ".join(leaked), "")
    print("ok: no fd leaked")


def bounded(src, env):
    """The run without a terminal: DEMO_SECONDS, batch frames of top, on a machine whose
    load average (DEMO_LOADAVG) is above its CPUs."""
    with tempfile.NamedTemporaryFile("w", prefix="loadavg.") as f:
        f.write("%d.00 3.00 2.00 9/999 4242\n" % (os.cpu_count() + 1))
        f.flush()
        run = subprocess.run(["bash", os.path.join(src, "scripts", "demo.sh")],
                             env=dict(env, DEMO_SECONDS="3", DEMO_LOADAVG=f.name),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=DEADLINE_END_S)
    out = run.stdout
    if run.returncode != 0:
        fail("the bounded demo exited %d" % run.returncode, out)
    after_top = after_last_frame(out)
    if after_top is None:
        fail("the bounded demo printed no frame of garctl top", out)
    for what in ("Legend (garctl top)", "Baseline:", "Load average: %d.00 3.00 2.00" % (os.cpu_count() + 1),
                 "The machine is busy (load >= CPUs)"):
        if what not in after_top:
            fail("bounded run: no '%s' after the last frame of garctl top" % what, out)
    print("ok: the bounded demo prints the legend, the load and that the machine is busy after its last frame")


if __name__ == "__main__":
    main()
