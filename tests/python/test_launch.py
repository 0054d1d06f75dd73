"""python -m oar.distributed.launch with real processes: the workers' environment (Paddle's and torchrun's
names), logs, a failing / killed / hanging worker (non-zero exit naming the rank, no orphans, no leaked
shared memory), --max_restart, two launchers that learn of each other's failure, the store's token, Slurm
and torchrun-style environments, and a two-node job across two network namespaces joined by a veth pair."""
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import uuid

import numpy as np
import pytest

from oar import _C
from oar.distributed import TCPStore
from oar.distributed.collective import _slurm_first_host

pytestmark = pytest.mark.skipif(not _C._kit_collectives_of("cpu"), reason="cpu plugin built without collectives")

# Variables a surrounding launcher or scheduler may have set: the tests start from none of them.
_JOB_VARS = ("PADDLE_", "MASTER_", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_", "OAR_STORE_TOKEN",
             "OAR_GLOO_", "POD_IP", "FLAGS_selected")

# A worker: all_reduce of [r + 1, 10 (r + 1)], then writes the result and its environment to out.<rank>.json.
_ALL_REDUCE = textwrap.dedent("""
    import json, os, sys
    import oar, oar.distributed as dist
    dist.init_parallel_env()
    r = dist.get_rank()
    t = oar.to_tensor([float(r + 1), 10.0 * (r + 1)])
    dist.all_reduce(t)
    print("hello from rank", r, flush=True)
    env = {k: v for k, v in os.environ.items() if k.startswith(("PADDLE_", "OAR_")) or k in
           ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK")}
    pe = dist.ParallelEnv()
    with open(os.path.join(sys.argv[1], "out.%d.json" % r), "w") as f:
        json.dump({"sum": t.numpy().tolist(), "env": env, "local_rank": pe.local_rank,
                   "world": dist.get_world_size()}, f)
    dist.destroy_process_group()
""")


# A Paddle 2.x data-parallel training script (unchanged but for the import): each rank trains on its own
# shard; every rank writes its final parameters so the test can check the replicas are bit-identical.
_DP_TRAIN = textwrap.dedent("""
    import sys
    import numpy as np
    import oar as paddle
    import oar.distributed as dist
    dist.init_parallel_env()
    paddle.seed(7)
    model = paddle.DataParallel(paddle.nn.Sequential(paddle.nn.Linear(8, 16), paddle.nn.ReLU(),
                                                     paddle.nn.Linear(16, 1)))
    opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    rng = np.random.default_rng(dist.get_rank())
    for step in range(5):
        x = paddle.to_tensor(rng.standard_normal((4, 8)).astype("float32"))
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
    np.savez(sys.argv[1] + "/params.%d.npz" % dist.get_rank(), *[p.numpy() for p in model.parameters()])
""")


def _clean_env(tag, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(_JOB_VARS)}
    env.update(OAR_STORE_TIMEOUT="60", OAR_LAUNCH_TEST_TAG=tag)
    env.update(extra)
    return env


def _script(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _launcher_cmd(*args):
    return [sys.executable, "-m", "oar.distributed.launch", *args]


def _launch(args, env, cwd, timeout=120, prefix=()):
    p = subprocess.run(list(prefix) + _launcher_cmd(*args), env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def _tagged(tag):
    """pids of live processes carrying this test's tag in their environment (the launcher's descendants)."""
    needle = f"OAR_LAUNCH_TEST_TAG={tag}".encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def tag():
    t = uuid.uuid4().hex[:12]
    yield t
    left = _tagged(t)
    for pid in left:  # never leave them behind, even when the test failed
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    assert not left, f"orphan processes of the job: {left}"


def test_two_workers_all_reduce_environment_and_logs(tmp_path, tag):
    script = _script(tmp_path, "ar.py", _ALL_REDUCE)
    # With a token: the launcher's store and the workers' store both require it.
    env = _clean_env(tag, OAR_STORE_TOKEN="job-secret-" + tag)
    rc, out, err = _launch(["--nproc_per_node", "2", "--log_dir", str(tmp_path / "logs"), "--job_id", "t1",
                            script, str(tmp_path)], env, tmp_path)
    assert rc == 0, err
    results = [json.loads((tmp_path / f"out.{r}.json").read_text()) for r in range(2)]
    for r, res in enumerate(results):
        assert res["sum"] == [3.0, 30.0]
        assert res["world"] == 2 and res["local_rank"] == r
        e = res["env"]
        assert e["PADDLE_TRAINER_ID"] == e["RANK"] == e["PADDLE_GLOBAL_RANK"] == str(r)
        assert e["PADDLE_TRAINERS_NUM"] == e["WORLD_SIZE"] == "2"
        assert e["PADDLE_LOCAL_RANK"] == e["LOCAL_RANK"] == e["PADDLE_RANK_IN_NODE"] == str(r)
        assert e["LOCAL_WORLD_SIZE"] == e["PADDLE_LOCAL_SIZE"] == "2"
        assert e["PADDLE_NNODES"] == "1" and e["GROUP_RANK"] == "0" and e["OAR_RESTART_COUNT"] == "0"
        eps = e["PADDLE_TRAINER_ENDPOINTS"].split(",")
        assert len(eps) == 2 and e["PADDLE_CURRENT_ENDPOINT"] == eps[r]
        assert e["PADDLE_MASTER"] == f"{e['MASTER_ADDR']}:{e['MASTER_PORT']}"
        assert e["MASTER_ADDR"] == "127.0.0.1" and e["PADDLE_DISTRI_BACKEND"] == "gloo"
        assert e["PADDLE_JOB_ID"] == "t1"
    assert results[0]["env"]["PADDLE_MASTER"] == results[1]["env"]["PADDLE_MASTER"]
    for r in range(2):  # one log per rank; rank 0's is also echoed on the console
        assert f"hello from rank {r}" in (tmp_path / "logs" / f"workerlog.{r}").read_text()
    assert "hello from rank 0" in out and "hello from rank 1" not in out


def test_failing_worker_stops_the_job_naming_the_rank(tmp_path, tag):
    # Rank 0 starts a child of its own (a process the launcher never saw), ignores SIGTERM (so only the
    # SIGKILL after the grace period ends it) and waits; rank 1 raises.
    script = _script(tmp_path, "fail.py", textwrap.dedent("""
        import os, signal, subprocess, sys, time
        if os.environ["RANK"] == "1":
            time.sleep(0.5)
            raise ValueError("boom from rank 1")
        subprocess.Popen(["sleep", "300"])
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(300)
    """))
    t0 = time.monotonic()
    rc, out, err = _launch(["--nproc_per_node", "2", "--log_dir", str(tmp_path / "logs"), script],
                           _clean_env(tag), tmp_path)
    assert rc == 1, err
    assert "rank 1 (node 0, local rank 1) exited with code 1" in err
    assert "ValueError: boom from rank 1" in err  # the tail of the failed worker's log
    assert time.monotonic() - t0 < 60
    # the tag fixture checks that nothing of the job, the sleeping child included, is left


def test_killed_worker_no_orphans_no_leaked_shared_memory(tmp_path, tag):
    # Each rank holds a shared-memory segment; rank 1 dies by SIGKILL after one all_reduce.
    script = _script(tmp_path, "kill.py", textwrap.dedent(f"""
        import os, signal, time
        from multiprocessing import shared_memory
        import oar, oar.distributed as dist
        r = int(os.environ["RANK"])
        shm = shared_memory.SharedMemory(name="oarlt_{tag}_%d" % r, create=True, size=4096)
        dist.init_parallel_env()
        t = oar.to_tensor([1.0])
        dist.all_reduce(t)
        if r == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(300)
    """))
    rc, out, err = _launch(["--nproc_per_node", "2", "--log_dir", str(tmp_path / "logs"), script],
                           _clean_env(tag), tmp_path)
    assert rc == 128 + 9, err
    assert "rank 1 (node 0, local rank 1) was killed by signal 9 (SIGKILL)" in err
    leaked = [f for f in os.listdir("/dev/shm") if f.startswith(f"oarlt_{tag}")]
    assert not leaked, f"leaked shared memory: {leaked}"


def test_hanging_rank_is_a_timeout_naming_it(tmp_path, tag):
    # Rank 1 never reaches the all_reduce: rank 0's fails after OAR_COLLECTIVE_TIMEOUT naming rank 1, and the
    # launcher stops the hanging rank.
    script = _script(tmp_path, "hang.py", textwrap.dedent("""
        import os, time
        import oar, oar.distributed as dist
        dist.init_parallel_env()
        if dist.get_rank() == 1:
            time.sleep(300)
        dist.all_reduce(oar.to_tensor([1.0]))
    """))
    t0 = time.monotonic()
    rc, out, err = _launch(["--nproc_per_node", "2", "--log_dir", str(tmp_path / "logs"), script],
                           _clean_env(tag, OAR_COLLECTIVE_TIMEOUT="3"), tmp_path)
    assert rc == 1, err
    assert "rank 0 (node 0, local rank 0) exited with code 1" in err
    log0 = (tmp_path / "logs" / "workerlog.0").read_text()
    assert "rank 1" in log0 and "all_reduce" in log0, log0
    assert time.monotonic() - t0 < 60


def test_devices_of_a_custom_device(tmp_path, tag):
    # The sim plugin's two devices as a custom device (Paddle: PADDLE_XCCL_BACKEND): worker i gets the index of
    # the i-th --devices label among the visible ones (SIM_VISIBLE_DEVICES), round-robin past the end.
    if len([d for d in _C.get_available_device() if d.startswith("sim:")]) < 2:
        pytest.skip("needs the sim plugin's two devices")
    script = _script(tmp_path, "dev.py", textwrap.dedent("""
        import json, os, sys
        keys = ("FLAGS_selected_sims", "PADDLE_DISTRI_BACKEND", "PADDLE_XCCL_BACKEND")
        with open(os.path.join(sys.argv[1], "dev.%s.json" % os.environ["RANK"]), "w") as f:
            json.dump({k: os.environ.get(k) for k in keys}, f)
    """))
    env = _clean_env(tag, PADDLE_XCCL_BACKEND="sim", SIM_VISIBLE_DEVICES="5,7")
    rc, out, err = _launch(["--devices", "7", "--nproc_per_node", "2", "--log_dir", str(tmp_path / "logs"), script,
                            str(tmp_path)], env, tmp_path)
    assert rc == 0, err
    for r in range(2):
        got = json.loads((tmp_path / f"dev.{r}.json").read_text())
        assert got == {"FLAGS_selected_sims": "1", "PADDLE_DISTRI_BACKEND": "xccl", "PADDLE_XCCL_BACKEND": "sim"}
    rc, out, err = _launch(["--devices", "3", script, str(tmp_path)], env, tmp_path)
    assert rc == 2 and "visible sim devices are 5,7" in err, err


def test_signalled_launcher_stops_its_workers(tmp_path, tag):
    script = _script(tmp_path, "sleep.py", "import time\nprint('started', flush=True)\ntime.sleep(300)\n")
    p = subprocess.Popen(_launcher_cmd("--nproc_per_node", "2", "--log_dir", str(tmp_path / "logs"), script),
                         env=_clean_env(tag), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "started"  # rank 0's log, echoed
        p.send_signal(15)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 128 + 15 and "the launcher of node 0 got signal 15" in err, err


def test_max_restart_restarts_the_whole_job(tmp_path, tag):
    # Rank 1 fails on the first attempt only (a marker file); the restarted job all_reduces correctly.
    script = _script(tmp_path, "flaky.py", textwrap.dedent("""
        import os, sys
        marker = os.path.join(sys.argv[1], "failed_once")
        if os.environ["RANK"] == "1" and not os.path.exists(marker):
            open(marker, "w").close()
            sys.exit(4)
    """) + _ALL_REDUCE)
    rc, out, err = _launch(["--nproc_per_node", "2", "--max_restart", "1", "--log_dir", str(tmp_path / "logs"),
                            script, str(tmp_path)], _clean_env(tag), tmp_path)
    assert rc == 0, err
    assert "rank 1 (node 0, local rank 1) exited with code 4; restart 1 of 1" in err
    for r in range(2):
        res = json.loads((tmp_path / f"out.{r}.json").read_text())
        assert res["sum"] == [3.0, 30.0] and res["env"]["OAR_RESTART_COUNT"] == "1"
    # The same failure without restarts ends the job.
    os.remove(tmp_path / "failed_once")
    rc, out, err = _launch(["--nproc_per_node", "2", "--log_dir", str(tmp_path / "logs2"), script, str(tmp_path)],
                           _clean_env(tag), tmp_path)
    assert rc == 4 and "job failed: rank 1 (node 0, local rank 1) exited with code 4" in err


def _two_launchers(tmp_path, script, envs, extra=(), prefixes=((), ()), ranks=("0", "1"), master=None, timeout=120):
    """Starts the launchers of a two-node job and returns their (rc, stdout, stderr). On one machine the
    ranks are given: with --rank -1 the first launcher able to listen on --master would host it."""
    master = master or f"127.0.0.1:{_free_port()}"
    procs = []
    for node in range(2):
        args = ["--nnodes", "2", "--master", master, "--rank", ranks[node],
                "--log_dir", str(tmp_path / f"logs{node}"), *extra, script, str(tmp_path)]
        procs.append(subprocess.Popen(list(prefixes[node]) + _launcher_cmd(*args), env=envs[node], cwd=tmp_path,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    try:
        for p in procs:
            o, e = p.communicate(timeout=timeout)
            outs.append((p.returncode, o, e))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return outs


def test_failure_on_one_node_stops_the_other(tmp_path, tag):
    # Two launchers (loopback): rank 1 on node 1 fails; node 0's rank 0 would sleep for minutes, but its
    # launcher reads the failure in the launcher store and stops it. Both exit with the worker's code.
    script = _script(tmp_path, "node_fail.py", textwrap.dedent("""
        import os, sys, time
        import oar.distributed as dist
        dist.init_parallel_env()
        if dist.get_rank() == 1:
            sys.exit(5)
        time.sleep(300)
    """))
    env = _clean_env(tag)
    t0 = time.monotonic()
    (rc0, _, err0), (rc1, _, err1) = _two_launchers(tmp_path, script, [env, env])
    assert rc0 == 5 and rc1 == 5, (err0, err1)
    for err in (err0, err1):
        assert "job failed: rank 1 (node 1, local rank 0) exited with code 5" in err
    assert time.monotonic() - t0 < 60


def test_launchers_with_different_tokens_are_refused(tmp_path, tag):
    script = _script(tmp_path, "ar.py", _ALL_REDUCE)
    env0 = _clean_env(tag, OAR_STORE_TOKEN="right", OAR_STORE_TIMEOUT="5")
    env1 = _clean_env(tag, OAR_STORE_TOKEN="wrong", OAR_STORE_TIMEOUT="5")
    (rc0, _, err0), (rc1, _, err1) = _two_launchers(tmp_path, script, [env0, env1])
    assert rc1 == 1 and "refused this process" in err1 and "wrong token" in err1, err1
    assert rc0 == 1 and "waited 5 s for 2 nodes" in err0, err0
    assert "refused a peer from 127.0.0.1" in err0 and "wrong token" in err0  # the master's side says so too
    assert not list(tmp_path.glob("out.*.json"))


def test_store_token_and_listen_address(monkeypatch, capfd):
    master = TCPStore("127.0.0.1", 0, True, 1, timeout=10, token="s3cret")
    port = master.port
    ok = TCPStore("127.0.0.1", port, False, 0, timeout=5, token="s3cret")
    ok.set("k", b"v")
    assert master.get("k") == b"v"
    with pytest.raises(RuntimeError, match="refused this process.*presented none"):
        TCPStore("127.0.0.1", port, False, 0, timeout=5, token="")
    with pytest.raises(RuntimeError, match="refused this process.*wrong token"):
        TCPStore("127.0.0.1", port, False, 0, timeout=5, token="s3cret2")
    monkeypatch.setenv("OAR_STORE_TOKEN", "s3cret")  # token=None reads the environment
    assert TCPStore("127.0.0.1", port, False, 0, timeout=5).get("k") == b"v"
    with pytest.raises(RuntimeError, match="presented a token .* but this store has none"):
        plain = TCPStore("127.0.0.1", 0, True, 1, timeout=10, token="")
        TCPStore("127.0.0.1", plain.port, False, 0, timeout=5)
    err = capfd.readouterr().err
    assert f"TCPStore master (port {port}): refused a peer from 127.0.0.1" in err and "wrong token" in err
    monkeypatch.delenv("OAR_STORE_TOKEN")
    # The master listens on its host's address only: 127.0.0.2 (loopback too, another address) is refused...
    only = TCPStore("127.0.0.1", 0, True, 1, timeout=10)
    with pytest.raises(RuntimeError, match="could not connect"):
        TCPStore("127.0.0.2", only.port, False, 0, timeout=0.5)
    # ...unless it asked for every interface; an address that is not this machine's is a clear error.
    every = TCPStore("0.0.0.0", 0, True, 1, timeout=10)
    TCPStore("127.0.0.2", every.port, False, 0, timeout=5).set("a", "b")
    with pytest.raises(RuntimeError, match="not an address of this machine"):
        TCPStore("192.0.2.1", 0, True, 1, timeout=1)


def test_bad_arguments(tmp_path, tag):
    script = _script(tmp_path, "noop.py", "")
    env = _clean_env(tag)
    for args, msg in ((["--nnodes", "2"], "needs --master"), (["--run_mode", "ps"], "only 'collective'"),
                      (["--nnodes", "2:4"], "elastic ranges"), (["--rank", "3"], "out of range"),
                      (["--master", "nohostport", "--nnodes", "2"], "is not host:port")):
        rc, out, err = _launch(args + [script], env, tmp_path)
        assert rc != 0 and msg in err, (args, err)


def _run_ranks(tmp_path, script, envs, timeout=90):
    procs = [subprocess.Popen([sys.executable, script, str(tmp_path)], env=e, cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for e in envs]
    try:
        outs = [p.communicate(timeout=timeout)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, o in zip(procs, outs):
        assert p.returncode == 0, o
    return [json.loads((tmp_path / f"out.{r}.json").read_text()) for r in range(len(envs))]


def test_slurm_node_list():
    assert _slurm_first_host("gpu[07-09,12],login1") == "gpu07"
    assert _slurm_first_host("host1,host2") == "host1"
    assert _slurm_first_host("n[1-2]-ib") == "n1-ib"
    assert _slurm_first_host("rack[2-3]node[5-6]") == "rack2node5"
    assert _slurm_first_host("single") == "single"


def test_init_parallel_env_under_slurm(tmp_path, tag):
    # srun's variables only; the port comes from the job id (15000 + id % 20000): pick an id whose port is free.
    for job in range(1000, 20000, 37):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", 15000 + job))
                break
            except OSError:
                continue
    script = _script(tmp_path, "ar.py", _ALL_REDUCE)
    envs = [_clean_env(tag, SLURM_PROCID=str(r), SLURM_LOCALID=str(r), SLURM_STEP_NUM_TASKS="2", SLURM_NTASKS="4",
                       SLURM_STEP_NODELIST="localhost", SLURM_JOB_ID=str(job)) for r in range(2)]
    res = _run_ranks(tmp_path, script, envs)
    for r in range(2):
        assert res[r]["sum"] == [3.0, 30.0] and res[r]["world"] == 2 and res[r]["local_rank"] == r


def test_init_parallel_env_torchrun_style(tmp_path, tag):
    script = _script(tmp_path, "ar.py", _ALL_REDUCE)
    port = str(_free_port())
    envs = [_clean_env(tag, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r), LOCAL_WORLD_SIZE="2",
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port) for r in range(2)]
    res = _run_ranks(tmp_path, script, envs)
    for r in range(2):
        assert res[r]["sum"] == [3.0, 30.0] and res[r]["world"] == 2 and res[r]["local_rank"] == r


def _netns_unavailable():
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    if not shutil.which("ip"):
        return "iproute2 (ip) is not installed"
    probe = f"oarprobe{os.getpid()}"
    if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode != 0:
        return "ip netns add failed (no network-namespace support here)"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def test_two_nodes_in_network_namespaces(tmp_path, tag):
    why = _netns_unavailable()
    if why:
        pytest.skip(why)
    n = os.getpid() % 100000
    ns = [f"oarlt{n}a", f"oarlt{n}b"]
    veth = [f"oarv{n}a", f"oarv{n}b"]
    addr = ["10.231.7.1", "10.231.7.2"]

    def ip(*args):
        subprocess.run(["ip", *args], check=True, capture_output=True)

    try:
        for name in ns:
            ip("netns", "add", name)
        ip("link", "add", veth[0], "type", "veth", "peer", "name", veth[1])
        for i in range(2):
            ip("link", "set", veth[i], "netns", ns[i])
            ip("-n", ns[i], "addr", "add", addr[i] + "/24", "dev", veth[i])
            ip("-n", ns[i], "link", "set", veth[i], "up")
            ip("-n", ns[i], "link", "set", "lo", "up")
        script = _script(tmp_path, "ar.py", _ALL_REDUCE)
        env = _clean_env(tag, OAR_STORE_TOKEN="netns-" + tag)
        outs = _two_launchers(tmp_path, script, [env, env], extra=["--nproc_per_node", "2"],
                              prefixes=[("ip", "netns", "exec", ns[0]), ("ip", "netns", "exec", ns[1])],
                              ranks=("0", "-1"), master=f"{addr[0]}:29517")  # node 1 is told its rank
        for rc, out, err in outs:
            assert rc == 0, err
        for r in range(4):  # ranks 0, 1 on node 0 and 2, 3 on node 1: sum of (r + 1) = 10
            res = json.loads((tmp_path / f"out.{r}.json").read_text())
            assert res["sum"] == [10.0, 100.0] and res["world"] == 4
            e = res["env"]
            assert e["PADDLE_NNODES"] == "2" and e["GROUP_RANK"] == str(r // 2) and e["LOCAL_RANK"] == str(r % 2)
            assert e["MASTER_ADDR"] == addr[0] and e["OAR_GLOO_HOSTNAME"] == addr[r // 2]
            assert e["PADDLE_CURRENT_ENDPOINT"].startswith(addr[r // 2] + ":")
        assert "hello from rank 0" in outs[0][1] and "hello from rank 2" in outs[1][1]
        # Data-parallel training across the two nodes: the four replicas end bit-identical.
        script = _script(tmp_path, "dp.py", _DP_TRAIN)
        outs = _two_launchers(tmp_path, script, [env, env], extra=["--nproc_per_node", "2", "--job_id", "dp"],
                              prefixes=[("ip", "netns", "exec", ns[0]), ("ip", "netns", "exec", ns[1])],
                              ranks=("0", "1"), master=f"{addr[0]}:29517")
        for rc, out, err in outs:
            assert rc == 0, err
        params = [np.load(tmp_path / f"params.{r}.npz") for r in range(4)]
        for r in range(1, 4):
            for k in params[0].files:
                np.testing.assert_array_equal(params[r][k], params[0][k])
        assert not np.array_equal(params[0]["arr_0"], params[0]["arr_0"] * 0)  # trained, not zeros
        # A worker of node 1 fails: node 0's launcher learns it through the store across the link.
        script = _script(tmp_path, "node_fail.py", textwrap.dedent("""
            import sys, time
            import oar.distributed as dist
            dist.init_parallel_env()
            if dist.get_rank() == 3:
                sys.exit(6)
            time.sleep(300)
        """))
        outs = _two_launchers(tmp_path, script, [env, env], extra=["--nproc_per_node", "2", "--job_id", "f"],
                              prefixes=[("ip", "netns", "exec", ns[0]), ("ip", "netns", "exec", ns[1])],
                              ranks=("0", "1"), master=f"{addr[0]}:29517")
        for rc, out, err in outs:
            assert rc == 6 and "job failed: rank 3 (node 1, local rank 1) exited with code 6" in err, err
    finally:
        for name in ns:  # deleting a namespace deletes its end of the veth pair, and with it the other end
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
