"""oar.distributed.TCPStore: the core's TCP key-value store from Python, across real processes, set up
from the launcher's environment variables, and its errors (bad host / port / timeout, a master gone)."""
import datetime
import os
import subprocess
import sys
import textwrap
import time

import pytest

import oar
from oar import _C
from oar.distributed import TCPStore

# Children get this environment without any launcher variables of the parent.
_ENV = {k: v for k, v in os.environ.items()
        if k not in ("PADDLE_MASTER", "MASTER_ADDR", "MASTER_PORT", "PADDLE_TRAINER_ID", "RANK",
                     "PADDLE_TRAINERS_NUM", "WORLD_SIZE", "OAR_STORE_TIMEOUT")}


def _child(code, env=None, **kw):
    e = dict(_ENV)
    e.update(env or {})
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=e, **kw)


def _read_port(proc):
    line = proc.stdout.readline()
    assert line.startswith("PORT "), line + proc.stdout.read()
    return int(line.split()[1])


def _free_port():
    s = TCPStore("127.0.0.1", 0, True, 1, timeout=5)
    port = s.port
    del s  # the master stops its server
    return port


def test_operations_in_one_process():
    s = TCPStore("127.0.0.1", 0, is_master=True, world_size=1, timeout=10)
    assert s.port > 0 and s.is_master and s.world_size == 1 and s.timeout == 10
    assert "master" in repr(s)
    s.set("b", b"\x00\xffbytes")
    assert s.get("b") == b"\x00\xffbytes"
    s.set("s", "text")  # str values are stored as UTF-8
    assert s.get("s") == b"text"
    s.set("ba", bytearray(b"xy"))
    assert s.get("ba") == b"xy"
    assert s.add("n", 3) == 3 and s.add("n", -5) == -2
    assert s.get("n") == b"-2"
    s.wait(["b", "n"])
    s.wait("s")
    assert s.check(["b", "s"]) and not s.check(["b", "missing"])
    n = s.num_keys()
    assert s.delete_key("b") is True and s.delete_key("b") is False
    assert s.num_keys() == n - 1
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="timed out after 200 ms waiting for key 'missing'"):
        s.wait("missing", timeout=datetime.timedelta(milliseconds=200))
    assert time.monotonic() - t0 < 30  # a bound against hanging, not a timing check
    with pytest.raises(ValueError, match="not an integer"):
        s.add("s", 1)
    with pytest.raises(TypeError, match="bytes or str"):
        s.set("k", 12)


def test_get_times_out_with_the_store_timeout():
    s = TCPStore("127.0.0.1", 0, True, 1, timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="timed out after 300 ms waiting for key 'nobody'"):
        s.get("nobody")
    assert 0.25 < time.monotonic() - t0 < 30  # waited for the timeout; an upper bound only against hanging


def test_two_processes():
    # The master picks a free port and prints it, so it must not wait for the worker in its constructor.
    master = _child("""
        from oar.distributed import TCPStore
        s = TCPStore("127.0.0.1", 0, True, 2, timeout=30, wait_for_workers=False)
        print("PORT", s.port, flush=True)
        s.set("from0", b"hello from rank 0")
        assert s.get("from1") == b"hello from rank 1"
        s.add("count", 10)
        s.wait(["worker_done"])
        print("MASTER OK", s.get("count").decode(), flush=True)
    """)
    try:
        port = _read_port(master)
        worker = _child("""
            import sys
            from oar.distributed import TCPStore
            s = TCPStore("127.0.0.1", int(sys.argv[1]), False, 2, timeout=30)
            assert s.get("from0") == b"hello from rank 0"
            s.set("from1", b"hello from rank 1")
            s.add("count", 1)
            s.wait("count")
            s.set("worker_done", "1")
            print("WORKER OK", flush=True)
        """.replace('sys.argv[1]', str(port)))
        out_w, _ = worker.communicate(timeout=60)
        out_m, _ = master.communicate(timeout=60)
    finally:
        if master.poll() is None:
            master.kill()
    assert "WORKER OK" in out_w, out_w
    assert master.returncode == 0, out_m
    assert "MASTER OK" in out_m, out_m
    assert int(out_m.split("MASTER OK")[1].split()[0]) in (10, 11)  # the worker's add may land first


def test_worker_started_before_the_master_waits_for_it():
    port = _free_port()
    worker = _child("""
        from oar.distributed import TCPStore
        s = TCPStore("127.0.0.1", {port}, False, 2, timeout=30)
        print("GOT", s.get("k").decode(), flush=True)
    """.format(port=port))
    time.sleep(0.5)  # the worker is retrying its connection
    master = TCPStore("127.0.0.1", port, True, 2, timeout=30)  # returns once the worker checked in
    master.set("k", "v")
    out, _ = worker.communicate(timeout=60)
    assert "GOT v" in out, out


def test_master_gone_is_an_error_not_a_hang():
    master = _child("""
        import sys
        from oar.distributed import TCPStore
        s = TCPStore("127.0.0.1", 0, True, 1, timeout=30)
        print("PORT", s.port, flush=True)
        sys.stdin.readline()  # exits when the parent says so
    """, stdin=subprocess.PIPE)
    port = _read_port(master)
    c = TCPStore("127.0.0.1", port, False, 0, timeout=60)
    c.set("k", "v")
    master.stdin.write("\n")
    master.stdin.flush()
    master.wait(timeout=30)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="(lost the connection to|cannot reach) the store master"):
        c.get("k")
    with pytest.raises(RuntimeError, match="cannot reach the store master at 127.0.0.1:{}".format(port)):
        c.set("k", "v")
    assert time.monotonic() - t0 < 30  # well below the client's 60 s timeout: no hang


def test_bad_host_port_and_timeout():
    with pytest.raises(ValueError, match="cannot resolve host 'no-such-host.invalid'"):
        TCPStore("no-such-host.invalid", 1234, False, 1, timeout=1)
    with pytest.raises(ValueError, match="port 70000 is out of range"):
        TCPStore("127.0.0.1", 70000, False, 1)
    with pytest.raises(ValueError, match="port 0 is out of range"):
        TCPStore("127.0.0.1", 0, False, 1)  # only a master may ask for any free port
    with pytest.raises(ValueError, match="positive"):
        TCPStore("127.0.0.1", 0, True, 1, timeout=0)
    with pytest.raises(TypeError, match="timeout must be seconds"):
        TCPStore("127.0.0.1", 0, True, 1, timeout="soon")
    port = _free_port()
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="could not connect to the store master at 127.0.0.1:{}".format(port)):
        TCPStore("127.0.0.1", port, False, 1, timeout=0.5)
    assert time.monotonic() - t0 < 30  # a bound against hanging, not a timing check
    m = TCPStore("127.0.0.1", 0, True, 1, timeout=5)
    with pytest.raises(RuntimeError, match="cannot listen on port {}".format(m.port)):
        TCPStore("127.0.0.1", m.port, True, 1, timeout=1)
    with pytest.raises(ValueError, match="longer than the limit"):
        m.set("k" * 5000, "v")


_ENV_CHILD = """
import sys, time
t0 = time.monotonic()
import oar
from oar import _C
print("IMPORTED", flush=True)   # import oar read nothing: the store is made on first use
s = _C._store_global()
print("STORE", type(s).__name__, s.is_master if s is not None else None, s.port if s is not None else None, flush=True)
{body}
"""


def test_store_from_launcher_environment():
    port = _free_port()
    rank0 = _child(_ENV_CHILD.format(body="""
s.set("hello", "from rank 0")
s.wait("bye")
print("RANK0 DONE", flush=True)
"""), env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0", "WORLD_SIZE": "2"})
    rank1 = _child(_ENV_CHILD.format(body="""
print("GOT", s.get("hello").decode(), flush=True)
s.set("bye", "1")
"""), env={"PADDLE_MASTER": "127.0.0.1:{}".format(port), "PADDLE_TRAINER_ID": "1", "PADDLE_TRAINERS_NUM": "2",
           "OAR_STORE_TIMEOUT": "30"})
    out1, _ = rank1.communicate(timeout=60)
    out0, _ = rank0.communicate(timeout=60)
    assert "STORE TCPStore True {}".format(port) in out0, out0
    assert "RANK0 DONE" in out0, out0
    assert "STORE TCPStore False {}".format(port) in out1, out1
    assert "GOT from rank 0" in out1, out1


def test_no_environment_means_no_global_store_and_bad_environment_errors():
    r = subprocess.run([sys.executable, "-c", "from oar import _C; print(_C._store_global())"],
                       capture_output=True, text=True, env=_ENV, timeout=60)
    assert r.stdout.strip() == "None", r.stdout + r.stderr
    for env, msg in [({"MASTER_ADDR": "no-such-host.invalid", "MASTER_PORT": "1234"}, "cannot resolve host"),
                     ({"MASTER_ADDR": "127.0.0.1"}, "MASTER_PORT is not"),
                     ({"PADDLE_MASTER": "localhost"}, "is not host:port"),
                     ({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "x"}, "MASTER_PORT='x' is not")]:
        code = ("import oar\nfrom oar import _C\nprint('IMPORTED', flush=True)\n"
                "try:\n    _C._store_global()\nexcept Exception as e:\n    print('ERR', e)\n")
        e = dict(_ENV)
        e.update(env)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=60)
        assert "IMPORTED" in r.stdout, r.stdout + r.stderr  # import oar never touches the store
        assert "ERR" in r.stdout and msg in r.stdout, (env, r.stdout + r.stderr)


def test_global_store_set_from_python():
    m = TCPStore("127.0.0.1", 0, True, 1, timeout=10)
    _C._store_set_global(m)
    try:
        assert _C._store_global() is m
    finally:
        _C._store_set_global(None)
    assert _C._store_global() is None


def test_forked_child_uses_its_own_connections_and_leaves_the_master_alone():
    """A forked child (a DataLoader worker, say) talks to the store on fresh connections, and dropping its
    copy of a master store neither stops the parent's server nor hangs."""
    m = TCPStore("127.0.0.1", 0, True, 1, timeout=10)
    m.set("before", "fork")  # leaves a pooled connection the child inherits
    c = TCPStore("127.0.0.1", m.port, False, 0, timeout=10)
    c.set("warm", "1")
    pid = os.fork()
    if pid == 0:  # child: exit status says what went wrong
        code = 0
        try:
            if c.get("before") != b"fork":
                code = 2
            c.set("from_child", "hi")
            m.set("from_child_master", "hi")
            del m, c  # the master's server belongs to the parent
        except BaseException:
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, status
    assert m.get("from_child") == b"hi" and c.get("from_child_master") == b"hi"
    m.set("after", "fork")  # the parent's server still runs
    assert c.get("after") == b"fork"


_SEMANTICS = """
import socket, sys
if sys.argv[1] == "paddle":
    from paddle.base import core
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    m = core.TCPStore("127.0.0.1", port, True, 1, 30)
else:
    from oar.distributed import TCPStore
    m = TCPStore("127.0.0.1", 0, True, 1, 30)
out = [m.add("n", 3), m.add("n", -5), m.add("fresh", 0), m.get("n"), m.get("fresh")]
m.set("s", "text"); out.append(m.get("s"))
m.set("b", b"\\x00\\xff"); out.append(m.get("b"))
m.set("b", b""); out.append(m.get("b"))
m.wait("s")
print("RESULT", repr(out), flush=True)
"""


def test_semantics_match_paddle():
    """The same calls on PaddlePaddle's core.TCPStore and on oar's give the same values (counters are decimal
    strings, str values come back as bytes). Needs OAR_PADDLE_PATH (a folder where `import paddle` works)."""
    paddle_path = os.environ.get("OAR_PADDLE_PATH", "")
    if not paddle_path or not os.path.isdir(paddle_path):
        pytest.skip("OAR_PADDLE_PATH is not set")
    env = dict(_ENV, FLAGS_enable_pir_api="0", PYTHONPATH=paddle_path)
    p = subprocess.run([sys.executable, "-c", _SEMANTICS, "paddle"], capture_output=True, text=True, env=env,
                       timeout=300)
    o = subprocess.run([sys.executable, "-c", _SEMANTICS, "oar"], capture_output=True, text=True, env=_ENV,
                       timeout=60)
    got = [line for line in o.stdout.splitlines() if line.startswith("RESULT")]
    want = [line for line in p.stdout.splitlines() if line.startswith("RESULT")]
    assert want, p.stdout + p.stderr
    assert got == want, (got, want)
