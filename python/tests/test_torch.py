"""garuda.torch against the FAKE libcuda.so.1 of tests/fakes (GARUDA_CUDA_LIBRARY; no
GPU, no torch): a stand-in object carrying .cuda_stream plays torch.cuda.Stream. Stores
queued behind fake kernels complete awaits and waits; a faulted stream fails them; the
segment is registered with the "device" and unregistered by reset(). A real torch check
runs only where torch with CUDA is importable (tests/gpu/run.sh on a GPU host)."""
import asyncio
import ctypes
import os
import sys

import pytest

import garuda
import garuda.torch as gt

FAKE = os.environ.get("GARUDA_FAKE_CUDA")
needs_fake = pytest.mark.skipif(not FAKE, reason="GARUDA_FAKE_CUDA not set (meson test sets "
                                "it to tests/fakes' libcuda.so.1)")


class Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in (
        "init_calls", "getproc_calls", "getproc_v2_calls", "getproc_version")] + [
        ("getproc_flags", ctypes.c_ulonglong)] + [(n, ctypes.c_int) for n in (
            "legacy_calls", "primary_retains", "primary_releases", "primary_refs", "pushes",
            "pops", "no_context", "registers", "unregisters", "registered")] + [
        ("register_flags", ctypes.c_uint), ("writes", ctypes.c_int),
        ("write_flags", ctypes.c_uint), ("bad_addresses", ctypes.c_int),
        ("queries", ctypes.c_int)]


class FakeCuda:
    def __init__(self):
        self.lib = ctypes.CDLL(FAKE)
        self.lib.cuInit(0)

    def stream(self):
        h = ctypes.c_void_p()
        assert self.lib.cuStreamCreate(ctypes.byref(h), 0) == 0
        return h.value

    def destroy(self, h):
        assert self.lib.cuStreamDestroy_v2(ctypes.c_void_p(h)) == 0

    def sleep(self, h, seconds):
        assert self.lib.fakeLaunchSleep(ctypes.c_void_p(h), ctypes.c_uint64(int(seconds * 1e9))) == 0

    def gate(self, h):
        """Queue a kernel that runs until the returned c_int is set non-zero."""
        g = ctypes.c_int(0)
        assert self.lib.fakeLaunchGate(ctypes.c_void_p(h), ctypes.byref(g)) == 0
        return g

    def fault(self, h):
        assert self.lib.fakeStreamFault(ctypes.c_void_p(h)) == 0

    def stats(self):
        st = Stats()
        self.lib.fakeCudaStats(ctypes.byref(st))
        assert st.bad_addresses == 0, "a store aimed at a non-device address"
        assert st.legacy_calls == 0
        return st


class StandIn:
    """What garuda.torch reads of a torch.cuda.Stream."""
    def __init__(self, handle, device_index=0):
        self.cuda_stream = handle
        self.device_index = device_index


@pytest.fixture
def fake(daemon):
    f = FakeCuda()
    yield f
    gt.reset()


@needs_fake
def test_fork_child_starts_without_the_parents_client(fake):
    """A fork()'s child does not reuse (nor free) the module's client and streams: they
    are the parent's. Its registry starts empty; the parent's stays and works."""
    h = fake.stream()
    ts = StandIn(h)
    gt.synchronize(ts, timeout=30)
    s = gt.stream_for(ts)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if (gt._client is None and not gt._streams and not gt._segments
                         and s.closed) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert gt.stream_for(ts) is s and not s.closed
    gt.synchronize(ts, timeout=30)
    gt.reset()
    fake.destroy(h)


@needs_fake
def test_signal_and_wait_stand_in(fake):
    h = fake.stream()
    ts = StandIn(h)
    for k in range(1, 11):
        fake.sleep(h, 0.0005)
        seq = gt.signal(ts)
        assert seq == k
        gt.wait(ts, seq, timeout=30)
    gt.synchronize(ts, timeout=30)
    s = gt.stream_for(ts)
    assert s is gt.stream_for(ts) and s.segment.backend == "cuda" and s.value == 11
    st = fake.stats()
    assert st.registered == 1 and st.writes >= 11
    gt.forget(ts)
    assert s.closed
    gt.reset()
    assert fake.stats().registered == 0
    fake.destroy(h)


@needs_fake
@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
async def test_synchronize_async_many_streams(fake, loop_kind):
    handles = [fake.stream() for _ in range(70)]  # more than one segment's 64 words
    outs = [StandIn(h) for h in handles]
    for h in handles:
        fake.sleep(h, 0.002)
    await asyncio.wait_for(asyncio.gather(*(gt.synchronize_async(t) for t in outs)), 60)
    assert all(gt.stream_for(t).value == 1 for t in outs)
    # after a "graph replay" (work queued on the stream), the store follows it
    fake.sleep(handles[0], 0.01)
    seq = gt.signal(outs[0])
    assert not gt.stream_for(outs[0]).reached(seq)
    await gt.wait_async(outs[0], seq, timeout=30)
    assert fake.stats().registered == 2
    gt.reset()
    for h in handles:
        fake.destroy(h)


@needs_fake
@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
async def test_fault_fails_await(fake, loop_kind):
    h = fake.stream()
    ts = StandIn(h)
    gt.stream_for(ts).async_backstop = 0.01
    g = fake.gate(h)
    first = gt.signal(ts)
    fake.fault(h)
    second = gt.signal(ts)  # queued behind the fault: never stored
    g.value = 1
    await gt.wait_async(ts, first, timeout=30)
    with pytest.raises(garuda.StreamFaultError):
        await gt.wait_async(ts, second, timeout=30)
    gt.reset()
    fake.destroy(h)


def test_bad_stream_object():
    with pytest.raises(TypeError):
        gt.signal(object())


@pytest.mark.skipif("torch" in sys.modules or __import__("importlib").util.find_spec("torch"),
                    reason="torch is installed here")
def test_without_torch_current_stream_is_clear_importerror():
    with pytest.raises(ImportError, match="PyTorch is not installed"):
        gt.signal()


def cpu_only_torch():
    """A stand-in for a CPU-only torch: cuda.is_available() is False and the CUDA calls
    fail as torch's own do (AssertionError, TypeError)."""
    import types
    torch = types.ModuleType("torch")
    torch.__version__ = "2.1.0+cpu"
    torch.version = types.SimpleNamespace(cuda=None)

    def not_compiled(*_a, **_k):
        raise AssertionError("Torch not compiled with CUDA enabled")

    class Stream:
        def __new__(cls, *a, **k):
            raise TypeError("cannot create 'torch._C._CudaStreamBase' instances")
    torch.cuda = types.SimpleNamespace(is_available=lambda: False,
                                       current_stream=not_compiled, Stream=Stream)
    return torch


def test_cpu_only_torch_is_garuda_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", cpu_only_torch())
    for call in (gt.signal, gt.stream_for, gt.synchronize, gt.require_cuda):
        with pytest.raises(gt.NoCudaError) as e:
            call()
        err = e.value
        assert isinstance(err, garuda.NoDriverError) and isinstance(err, garuda.Error)
        assert err.code == 1024
        msg = str(err)
        assert msg.startswith("garuda.torch: torch has no CUDA"), msg
        assert "2.1.0+cpu" in msg and "CPU-only" in msg
        assert "host streams still work" in msg and "garuda.HostStream" in msg
    with pytest.raises(gt.NoCudaError):
        asyncio.run(gt.synchronize_async())
    # torch built for CUDA but no usable driver or GPU: said so too
    t = cpu_only_torch()
    t.version.cuda = "12.1"
    monkeypatch.setitem(sys.modules, "torch", t)
    with pytest.raises(gt.NoCudaError, match="built for CUDA 12.1, but no NVIDIA driver"):
        gt.signal()


@needs_fake
def test_stand_in_needs_no_cuda_torch(fake, monkeypatch):
    """An object with an int .cuda_stream needs no torch, CUDA-less or not."""
    monkeypatch.setitem(sys.modules, "torch", cpu_only_torch())
    h = fake.stream()
    ts = StandIn(h)
    gt.synchronize(ts, timeout=30)
    gt.reset()
    fake.destroy(h)


def _torch_cuda():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.skipif(not _torch_cuda(), reason="needs torch with CUDA and a GPU "
                    "(tests/gpu/run.sh runs it on a GPU host)")
async def test_real_torch(daemon):
    import os as _os
    if FAKE and _os.environ.get("GARUDA_CUDA_LIBRARY") == FAKE:
        pytest.skip("the cuda backend points at the fake libcuda here")
    import torch
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a = torch.randn(2048, 2048, device="cuda")
        b = a @ a
    await gt.synchronize_async(s, timeout=30)
    assert s.query()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        c = b @ b
    g.replay()
    seq = gt.signal(s)
    await gt.wait_async(s, seq, timeout=30)
    assert s.query()
    del c
    gt.reset()
