"""Fixtures of the Python suite: a garudad per session (daemon.py) exported through
GARUDA_SOCKET, a fresh one for tests that need their own config or kill it, an fd-leak
check around every test (the C suite's tests/common/fdcheck.h, for Python), and every
async test of a module that overrides loop_kind with LOOP_KINDS runs twice: under asyncio's default loop and under uvloop."""
import asyncio
import gc
import os

import pytest

from daemon import Daemon


# What libgaruda (client/client.c, proto/paths.c) and garctl read from the
# environment: a host where garuda is installed and in use may have any of them set,
# and none may change what a test sees (tests/meson.build's test setup sets them empty
# for meson; this covers a plain `pytest` run too). A test that needs one sets it
# (monkeypatch.setenv, undone after it), and the daemon fixture exports GARUDA_SOCKET.
HOST_ENVIRONMENT = ("GARUDA_FALLBACK", "GARUDA_WAIT_PLAN", "GARUDA_WORDWAIT",
                    "GARUDA_CONNECT_TIMEOUT", "GARUDA_SOCKET", "GARUDA_CONTROL_SOCKET",
                    "XDG_RUNTIME_DIR", "GARUDA_DEBUG", "GARUDA_HOST_NUMA_NODE")


@pytest.fixture(scope="session", autouse=True)
def no_host_environment():
    """Delete HOST_ENVIRONMENT for the whole session: session scoped and autouse, so
    it runs before the daemon fixture exports GARUDA_SOCKET (and before any test)."""
    saved = {k: os.environ.pop(k) for k in HOST_ENVIRONMENT if k in os.environ}
    yield
    os.environ.update(saved)


@pytest.fixture(scope="session")
def daemon():
    d = Daemon()
    old = os.environ.get("GARUDA_SOCKET")
    os.environ["GARUDA_SOCKET"] = d.sock
    yield d
    if old is None:
        os.environ.pop("GARUDA_SOCKET", None)
    else:
        os.environ["GARUDA_SOCKET"] = old
    d.stop()


@pytest.fixture
def make_daemon():
    """Start a private garudad with extra config members: make_daemon({...})."""
    made = []

    def make(extra=None):
        d = Daemon(extra)
        made.append(d)
        return d
    yield make
    for d in made:
        d.stop()


def _fds():
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            out[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass  # the directory's own fd, gone already
    return out


@pytest.fixture(autouse=True)
def fdcheck(request):
    """Every test leaves the same fds open as it found (after collecting garbage)."""
    gc.collect()
    before = _fds()
    yield
    gc.collect()
    after = _fds()
    leaked = {fd: t for fd, t in after.items() if before.get(fd) != t}
    assert not leaked, f"{request.node.name} leaked fds: {leaked}"


@pytest.fixture
def loop_kind():
    """The event loop async tests run in; modules of async tests override it with
    both_loops (pytest-asyncio requests event_loop too late to parametrize it)."""
    return "asyncio"


LOOP_KINDS = ["asyncio", "uvloop"]


@pytest.fixture
def event_loop(loop_kind):
    if loop_kind == "uvloop":
        uvloop = pytest.importorskip("uvloop", reason="python3-uvloop is not installed")
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture
def gate():
    """gate(host_stream): queue an item that holds the host stream until the returned
    threading.Event is set (set at the latest when the test ends), so "not done yet"
    never depends on timing."""
    import threading
    events = []

    def make(hs):
        ev = threading.Event()
        events.append(ev)
        hs.enqueue_call(lambda: ev.wait(60))
        return ev
    yield make
    for ev in events:
        ev.set()
