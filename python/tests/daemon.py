"""daemon.py — a garudad for the Python tests, as tests/client/tdaemon.c starts one for
the C tests: the build tree's garudad ($GARUDAD) on a client and a control socket in a
private temporary directory, with the same flags and base config
({"socket_group":"","control_group":"","log_level":"info"} plus extra members).
kill() is a crash (SIGKILL), restart() starts it again on the same sockets, stop() is
SIGTERM and checks a clean exit 0; pause() hangs it (SIGSTOP: it reads, writes and
answers nothing) until resume() (SIGCONT). It dies with the test process
(PR_SET_PDEATHSIG)."""
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

DEADLINE = 20.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Daemon:
    def __init__(self, extra=None):
        self.bin = os.environ.get("GARUDAD")
        if not self.bin:
            raise RuntimeError("GARUDAD is not set (meson test sets it to the built garudad)")
        self.dir = tempfile.mkdtemp(prefix="garuda-py-test.")
        self.sock = os.path.join(self.dir, "g.sock")
        self.ctl = os.path.join(self.dir, "c.sock")
        self.cfg = os.path.join(self.dir, "garudad.json")
        self.log = os.path.join(self.dir, "garudad.log")
        cfg = {"socket_group": "", "control_group": "", "log_level": "info"}
        cfg.update(extra or {})
        with open(self.cfg, "w") as f:
            json.dump(cfg, f)
        self.proc = None
        self.start()

    def start(self):
        assert self.proc is None, "garudad already running"
        env = {k: v for k, v in os.environ.items()
               if k not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID")}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [self.bin, f"--config={self.cfg}", f"--socket={self.sock}",
                 f"--control-socket={self.ctl}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                preexec_fn=_die_with_parent, close_fds=True)
        end = time.monotonic() + DEADLINE
        while not self._can_connect():
            if self.proc.poll() is not None:
                rc, self.proc = self.proc.returncode, None
                raise RuntimeError(f"garudad exited during start-up ({rc}):\n{self.log_text()}")
            if time.monotonic() > end:
                raise RuntimeError(f"garudad did not accept on {self.sock}:\n{self.log_text()}")
            time.sleep(0.002)

    restart = start

    def _can_connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(self.sock)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def pause(self):
        """SIGSTOP garudad; returns once every thread of it is stopped."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        end = time.monotonic() + DEADLINE
        while not self._stopped():
            if time.monotonic() > end:
                raise RuntimeError(f"garudad did not stop on SIGSTOP:\n{self.log_text()}")
            time.sleep(0.002)

    def _stopped(self):
        for tid in os.listdir(f"/proc/{self.proc.pid}/task"):
            try:
                with open(f"/proc/{self.proc.pid}/task/{tid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue  # a thread that just exited
            if state != "T":
                return False
        return True

    def resume(self):
        """SIGCONT garudad (after pause())."""
        if self.proc is not None:
            os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self):
        try:
            if self.proc is not None:
                self.proc.send_signal(signal.SIGCONT)  # a paused one must run to exit
                self.proc.terminate()
                try:
                    rc = self.proc.wait(DEADLINE)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
                    raise AssertionError(f"garudad did not exit on SIGTERM:\n{self.log_text()}")
                finally:
                    self.proc = None
                assert rc == 0, f"garudad did not exit cleanly ({rc}):\n{self.log_text()}"
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def log_text(self):
        try:
            with open(self.log) as f:
                return f.read()
        except OSError:
            return ""

    def control(self, request):
        """One JSON request on the control socket (garctl's protocol); the reply."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(DEADLINE)
            s.connect(self.ctl)
            s.send(json.dumps(request).encode())
            return json.loads(s.recv(1 << 20).decode())

    def status(self, key):
        return self.control({"request": "status"}).get(key)

    def wait_status(self, key, value):
        end = time.monotonic() + DEADLINE
        v = self.status(key)
        while v != value and time.monotonic() < end:
            time.sleep(0.002)
            v = self.status(key)
        return v
