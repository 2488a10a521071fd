"""libgaruda's explanations reach Python: an exception raised from a libgaruda call
carries garuda_last_error()'s text (read by the prototype's errcheck right after the
failing call, on the calling thread) in .detail and at the end of its message — a
failed connect names the socket and what to do, a quota refusal names the quota key,
its limit and the usage, a missing driver names the library. A text left by an older
failure is not attached to a failure that gave none. A GARUDA_FALLBACK=reactor client
without garudad reports its coded warning (Client.warning) and issues a GarudaWarning
with the code."""
import pickle
import threading
import warnings

import pytest

import garuda


def test_connect_missing_socket_says_path_and_hint(tmp_path, monkeypatch):
    path = str(tmp_path / "no-garudad-here.sock")
    with pytest.raises(garuda.ErrnoError) as e:
        garuda.Client(path)
    err = e.value
    assert err.name == "ENOENT" and isinstance(err, OSError)
    assert path in err.detail and "start garudad" in err.detail
    assert "GARUDA_SOCKET" in err.detail  # the remedy names the variable
    assert path in str(err) and "start garudad" in str(err)
    # the socket chosen by $GARUDA_SOCKET: the text says so
    monkeypatch.setenv("GARUDA_SOCKET", path)
    with pytest.raises(garuda.ErrnoError) as e:
        garuda.Client()
    assert path in e.value.detail and "GARUDA_SOCKET" in e.value.detail


def test_quota_refusal_names_the_key(make_daemon):
    d = make_daemon({"quota": {"connection": {"segments": 1}}})
    with garuda.Client(d.sock) as c:
        seg = c.segment()
        for _ in range(2):  # a repeated refusal carries its text again
            with pytest.raises(garuda.QuotaError) as e:
                c.segment()
            err = e.value
            assert err.code == 1016 and err.text == garuda.strerror(1016)
            assert "quota.connection.segments" in err.detail, err.detail
            assert "limit 1" in err.detail and "1 in use" in err.detail, err.detail
            assert "quota.connection.segments" in str(err)
        # an unknown backend is explained (issue 30, item 15: EINVAL had no detail)
        with pytest.raises(garuda.ErrnoError) as e:
            c.segment("no-such-backend")
        assert e.value.name == "EINVAL" and "quota" not in str(e.value)
        assert e.value.detail == ('unknown backend "no-such-backend": the backends are '
                                  'host, cuda and hip'), e.value.detail
        # a failure libgaruda does not explain gets no stale text from the one before
        with seg.stream() as s, pytest.raises(garuda.ErrnoError) as e:
            s.set_wait(spin=0, backstop=1e-6)
        assert e.value.detail == "" and "quota" not in str(e.value)
        seg.close()


def test_wait_before_a_signal_says_so(daemon):
    """EINVAL from a wait for a sequence never signalled carries why (issue 30, item
    15): before any signal, and past the last signal."""
    with garuda.Client() as c, c.segment() as seg, seg.stream() as s:
        with pytest.raises(garuda.ErrnoError) as e:
            s.wait(timeout=1)
        assert e.value.name == "EINVAL"
        assert e.value.detail.startswith("a wait before any signal on this stream"), e.value.detail
        assert "garuda_stream_signal()" in str(e.value)
        seq = s.signal()
        with pytest.raises(garuda.ErrnoError) as e:
            s.wait(seq + 1, timeout=1)
        assert e.value.detail == (f"a wait for sequence {seq + 1}, which was not signalled on "
                                  f"this stream (its last signal gave {seq}): it would never "
                                  "complete"), e.value.detail
        s.wait(seq, timeout=30)


def test_missing_driver_names_the_library(daemon, monkeypatch):
    lib = "/nonexistent/garuda-test/libcuda.so.1"
    monkeypatch.setenv("GARUDA_CUDA_LIBRARY", lib)
    with garuda.Client() as c:
        with pytest.raises(garuda.NoDriverError) as e:
            c.segment("cuda")
    assert lib in e.value.detail and "GARUDA_CUDA_LIBRARY" in e.value.detail
    assert lib in str(e.value)


def test_bad_plan_names_the_key(daemon):
    if not garuda.has_plans():
        pytest.skip("this libgaruda has no garuda_stream_set_plan")
    with garuda.Client() as c, c.segment() as seg, seg.stream() as s:
        with pytest.raises(garuda.BadPlanError) as e:
            s.set_plan("spin")
    assert e.value.detail.startswith("kind:"), e.value.detail


def _stale_words(c):
    """An older failure with words: "stale-words" must never show again."""
    with pytest.raises(garuda.ErrnoError) as e:
        c.segment("stale-words")
    assert "stale-words" in e.value.detail


def _each_fails_with_its_own_words(c, failures):
    """(class, the failure, its own words or "") each after an older failure's words."""
    for cls, fail, own in failures:
        _stale_words(c)
        with pytest.raises(cls) as e:
            fail()
        err = e.value
        assert "stale-words" not in err.detail and "stale-words" not in str(err), err
        assert own in err.detail if own else err.detail == "", err


def test_stale_text_never_shows_on_a_later_failure(daemon):
    """Each failure's detail is its own words or "", never an older failure's (issue
    31, item 5: libgaruda's contract, read as it is): after a failure with words, later
    failures of streams, plans, waits and host streams, the same failure twice
    included, carry none of them."""
    gate = threading.Event()
    with garuda.Client() as c, c.segment() as seg, garuda.HostStream() as hs, \
            seg.stream(hs) as s, seg.stream(form=garuda.Readiness.POLL) as p:
        hs.enqueue_call(gate.wait)  # the stream stays busy until the gate opens
        try:
            seq = s.signal()
            _each_fails_with_its_own_words(c, [
                (garuda.ErrnoError, lambda: s.set_wait(spin=0, backstop=1e-6), ""),
                (garuda.ErrnoError, p.fileno, ""),
                (garuda.ErrnoError, lambda: p.set_callback(lambda *_: None), ""),
                (garuda.TimeoutError, lambda: s.wait(seq, timeout=0), ""),
                (garuda.TimeoutError, lambda: s.wait(seq, timeout=0), ""),
                (garuda.ErrnoError, lambda: s.wait(seq + 1, timeout=0), "which was not signalled"),
                (garuda.ErrnoError, lambda: c.segment("host", lines=0), "a segment of 0 lines"),
                (garuda.ErrnoError, lambda: garuda.HostStream(depth=1 << 21), ""),
            ] + ([(garuda.BadPlanError, lambda: s.set_plan("spin"), "kind:")]
                 if garuda.has_plans() else []))
        finally:
            gate.set()  # a failed check must not leave the worker blocked
        s.wait(seq, timeout=30)
        hs.enqueue_fault()
        _each_fails_with_its_own_words(c, [(garuda.StreamFaultError, f, "")
                                           for f in (hs.drain, s.signal, s.query, hs.query)])


def test_explanation_is_the_calling_threads(tmp_path):
    """Each thread's failure carries its own text (libgaruda keeps one per thread)."""
    out = {}

    def run(i):
        path = str(tmp_path / f"thread-{i}.sock")
        got = []
        for _ in range(20):
            try:
                garuda.Client(path)
            except garuda.ErrnoError as e:
                got.append(path in e.detail and all(
                    f"thread-{j}.sock" not in e.detail for j in range(4) if j != i))
        out[i] = got
    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(out[i] == [True] * 20 for i in range(4)), out


def test_detail_survives_pickle(make_daemon):
    d = make_daemon({"quota": {"connection": {"segments": 1}}})
    with garuda.Client(d.sock) as c, c.segment():
        with pytest.raises(garuda.QuotaError) as e:
            c.segment()
    back = pickle.loads(pickle.dumps(e.value))
    assert type(back) is garuda.QuotaError
    assert back.detail == e.value.detail and str(back) == str(e.value)


def test_fallback_reactor_warns_with_code(tmp_path, monkeypatch):
    monkeypatch.setenv("GARUDA_FALLBACK", "reactor")
    path = str(tmp_path / "no-garudad.sock")
    with pytest.warns(garuda.GarudaWarning, match=r"FALLBACK_REACTOR \(1035\)") as rec:
        c = garuda.Client(path)
    try:
        [w] = [r for r in rec if issubclass(r.category, garuda.GarudaWarning)]
        assert w.message.code == 1035 and w.message.name == "FALLBACK_REACTOR"
        assert w.filename == __file__  # points at the caller's connect
        code, text = c.warning
        assert code == 1035 and text == w.message.text
        assert path in text and "reactor" in text
        assert not c.connected
        # the client works without garudad: the in-process reactor delivers readiness
        with c.segment() as seg, seg.stream() as s:
            s.wait(s.signal(), timeout=30)
    finally:
        c.close()


def test_no_warning_with_garudad(daemon, monkeypatch):
    monkeypatch.setenv("GARUDA_FALLBACK", "reactor")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with garuda.Client() as c:
            assert c.warning is None and c.connected


def test_strict_fallback_unset_raises_not_warns(tmp_path, monkeypatch):
    monkeypatch.delenv("GARUDA_FALLBACK", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(garuda.ErrnoError):
            garuda.Client(str(tmp_path / "none.sock"))


def test_fallback_warning_as_error_leaks_nothing(tmp_path, monkeypatch):
    """warnings set to "error": the connect raises the GarudaWarning and the client it
    made is closed (the fd check around every test sees its socket and reactor go)."""
    monkeypatch.setenv("GARUDA_FALLBACK", "reactor")
    with warnings.catch_warnings():
        warnings.simplefilter("error", garuda.GarudaWarning)
        with pytest.raises(garuda.GarudaWarning) as e:
            garuda.Client(str(tmp_path / "none.sock"))
    assert e.value.code == 1035
