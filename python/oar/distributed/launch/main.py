"""The launcher: starts a collective job's worker processes on this node and watches them (Paddle 2.x's
`python -m paddle.distributed.launch`, collective mode). docs/distributed.md, "The launcher".

One launcher runs per node. The launchers meet through a TCPStore (the "launcher store") at `--master`,
hosted by the node of rank 0; through it they exchange their addresses, pick the workers' store address,
and learn of a failure on any node. Each (re)start of the job is a generation with its own keys and its
own workers' store port, so a restarted job never reads the previous attempt's state.
"""
import argparse
import ctypes
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

__all__ = ["launch"]

_GRACE_S = 5.0      # SIGTERM -> SIGKILL
_POLL_S = 0.2       # how often the watch loop looks at the workers and the store
_LEAVE_WAIT_S = 30  # how long the host keeps the launcher store up for the other nodes to read the outcome


class LaunchError(Exception):
    """A launcher failure that is not a worker's (bad arguments, unreachable master): message and exit 1."""


def _strtobool(v):
    t = str(v).strip().lower()
    if t in ("1", "true", "yes", "y", "on"):
        return True
    if t in ("0", "false", "no", "n", "off"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {v!r}")


def _env_int(name, default):
    v = os.environ.get(name)
    if v in (None, ""):
        return default
    try:
        return int(v)
    except ValueError:
        raise SystemExit(f"oar.distributed.launch: environment variable {name}={v!r} is not an integer") from None


def _parser():
    env = os.environ.get
    p = argparse.ArgumentParser(
        prog="python -m oar.distributed.launch",
        description="Starts a collective job: --nproc_per_node workers on this node, ranks node_rank * "
                    "nproc_per_node + local rank. Flags as PaddlePaddle's launcher; a flag not given is read "
                    "from Paddle's environment variable (PADDLE_MASTER, PADDLE_NNODES, ...).")
    p.add_argument("--master", default=env("PADDLE_MASTER"),
                   help="host:port of the launcher store (hosted by the node of rank 0); needed with --nnodes > 1")
    p.add_argument("--rank", type=int, default=_env_int("PADDLE_RANK", -1),
                   help="this node's rank (-1: the node that can host --master is 0, the others in arrival order)")
    p.add_argument("--nnodes", default=env("PADDLE_NNODES", "1"), help="number of nodes (default 1)")
    p.add_argument("--nproc_per_node", type=int,
                   default=_env_int("PADDLE_NPROC_PER_NODE", None),
                   help="workers on this node (default: one per selected device; 1 on cpu)")
    p.add_argument("--log_dir", default=env("PADDLE_LOG_DIR", "log"),
                   help="folder of the workers' logs, workerlog.<local rank> (default ./log)")
    p.add_argument("--log_overwrite", type=_strtobool, default=False,
                   help="truncate existing logs instead of appending (default False)")
    p.add_argument("--log_level", default="INFO", help="accepted for compatibility")
    p.add_argument("--run_mode", default=env("PADDLE_RUN_MODE", "collective"), help="only 'collective'")
    p.add_argument("--job_id", default=env("PADDLE_JOB_ID", "default"),
                   help="the job's name: keys in the launcher store are kept apart per job")
    p.add_argument("--devices", "--gpus", "--npus", "--xpus", default=env("PADDLE_DEVICES"),
                   help="device ids for this node's workers, e.g. 0,1 (worker i gets device i)")
    p.add_argument("--host", default=env("POD_IP"),
                   help="this node's address as the other nodes see it (default: the one routing to --master)")
    p.add_argument("--max_restart", type=int, default=_env_int("PADDLE_MAX_RESTART", 0),
                   help="restarts of the whole job after a failure (default 0: a failure ends the job)")
    p.add_argument("training_script", help="the training script (a .py file runs under this Python)")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


# ---- the job's layout -----------------------------------------------------------------------------------

def _split_master(text):
    t = text.strip()
    for scheme in ("http://", "https://"):
        if t.startswith(scheme):
            t = t[len(scheme):]
    if "://" in t:
        raise LaunchError(f"--master {text!r}: only host:port is supported (no etcd)")
    host, sep, port = t.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise LaunchError(f"--master {text!r} is not host:port")
    return host.strip("[]"), int(port)


def _route_ip(host, port):
    """This machine's address on the route to host:port (what the other nodes reach us at)."""
    try:
        family, _, _, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect(addr)  # UDP: no packet is sent, the kernel only picks the route
            return s.getsockname()[0]
    except OSError as e:
        raise LaunchError(f"--master {host}:{port}: no route to it from this machine ({e})") from None


def _free_port(ip):
    # Free now; the user binds it a moment later (the same tiny race as Paddle's launcher).
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((ip, 0))
        except OSError as e:
            raise LaunchError(f"this node's address {ip} (--host / POD_IP) cannot be used here: {e}") from None
        return s.getsockname()[1]


def _endpoint(ip, port):
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _device_plan(args, parser):
    """(device type, per-worker device ids or None on cpu, number of workers). As Paddle: a custom device
    when PADDLE_XCCL_BACKEND names one, else the default device's type; --devices lists labels of the
    visible devices (CUDA_VISIBLE_DEVICES / <TYPE>_VISIBLE_DEVICES when set), and a worker gets the
    index of its label among them."""
    import oar
    dtype = os.environ.get("PADDLE_XCCL_BACKEND") or oar.get_device().split(":")[0]
    if dtype == "cpu":
        return dtype, None, args.nproc_per_node or 1  # Paddle: --devices means nothing on cpu
    count = len([d for d in oar._C.get_available_device() if d.split(":")[0] == dtype])
    if count == 0:
        parser.error(f"PADDLE_XCCL_BACKEND={dtype}: this node has no {dtype} device")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES" if dtype == "gpu" else f"{dtype.upper()}_VISIBLE_DEVICES")
    labels = visible.split(",")[:count] if visible and visible != "all" else [str(i) for i in range(count)]
    wanted = [d.strip() for d in args.devices.split(",") if d.strip()] if args.devices else labels
    bad = [d for d in wanted if d not in labels]
    if bad or not wanted:
        parser.error(f"--devices {args.devices!r}: this node's visible {dtype} devices are {','.join(labels)}")
    # More workers than devices share them round-robin (e.g. 2 ranks on one GPU to test a 2-rank path).
    return dtype, [labels.index(d) for d in wanted], args.nproc_per_node or len(wanted)


def _worker_command(args):
    if args.training_script.endswith(".py"):
        return [sys.executable, "-u", args.training_script] + args.training_script_args
    return [args.training_script] + args.training_script_args


def _describe(code):
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "?"
        return f"was killed by signal {-code} ({name})"
    return f"exited with code {code}"


def _exit_code(code):
    return code if code > 0 else 128 - code  # a signal: the shell's convention, 128 + signal


def _say(msg):
    print(f"oar.distributed.launch: {msg}", file=sys.stderr, flush=True)


# ---- this node's workers ----------------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _child_setup():
    # Runs in the child between fork and exec: SIGKILL if the launcher dies without stopping the worker.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _group_members(pgid):
    """pids of the live (not zombie) processes of process group `pgid`."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            out.append(int(d))
    return out


class _Pod:
    """This node's workers of one generation, each in its own session (so its whole process group, its own
    children such as DataLoader workers included, can be signalled), watched by one thread each (so exits
    arrive in the order they happen), stopped group by group."""

    def __init__(self, cmd, envs, log_paths, overwrite):
        self.procs = []
        self.exits = queue.Queue()
        self.codes = {}
        # Local rank 0's log is copied to the console as it grows (as Paddle does), from where this run starts.
        start = 0 if overwrite or not os.path.exists(log_paths[0]) else os.path.getsize(log_paths[0])
        self._echo = open(os.devnull, "rb")
        for local, (env, path) in enumerate(zip(envs, log_paths)):
            try:
                with open(path, "wb" if overwrite else "ab") as log:
                    p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_child_setup)
            except OSError as e:  # e.g. a training script that is not an executable file
                self.stop()
                raise LaunchError(f"cannot start {cmd[0]!r}: {e}") from None
            self.procs.append(p)
            threading.Thread(target=self._wait, args=(local, p.pid), daemon=True).start()
        self._echo.close()
        self._echo = open(log_paths[0], "rb")
        self._echo.seek(start)

    def _wait(self, local, pid):
        # WNOWAIT: the exited worker stays a zombie until stop() reaps it, so its pid (= its process group
        # id) cannot be reused by an unrelated process before stop() signals the group.
        r = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        code = r.si_status if r.si_code == os.CLD_EXITED else -r.si_status
        self.exits.put((local, code))

    def echo(self):
        data = self._echo.read()
        if data:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()

    def all_exited(self):
        return len(self.codes) == len(self.procs)

    def stop(self):
        """SIGTERM to every worker's process group, SIGKILL to what is left after the grace period, then
        reaps the workers. Also sweeps the groups of workers that exited (their children)."""
        groups = [p.pid for p in self.procs]
        for g in groups:
            try:
                os.killpg(g, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + _GRACE_S
        while time.monotonic() < deadline and any(_group_members(g) for g in groups):
            time.sleep(0.05)
        for g in groups:
            try:
                os.killpg(g, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for p in self.procs:
            p.wait()
        self.echo()
        self._echo.close()


# ---- the launcher ---------------------------------------------------------------------------------------

class _Launcher:
    def __init__(self, args, parser):
        self.args = args
        self.parser = parser
        self.interrupted = 0
        if args.run_mode not in (None, "collective"):
            parser.error(f"--run_mode {args.run_mode!r}: only 'collective' is supported")
        try:
            self.nnodes = int(args.nnodes)
        except ValueError:
            parser.error(f"--nnodes {args.nnodes!r}: an integer (elastic ranges such as 2:4 are not supported)")
        if self.nnodes < 1:
            parser.error(f"--nnodes {self.nnodes}: must be at least 1")
        if args.nproc_per_node is not None and args.nproc_per_node < 1:
            parser.error(f"--nproc_per_node {args.nproc_per_node}: must be at least 1")
        if args.max_restart < 0:
            parser.error(f"--max_restart {args.max_restart}: must be 0 or more")
        if not -1 <= args.rank < self.nnodes:
            parser.error(f"--rank {args.rank} is out of range for --nnodes {self.nnodes}")
        if self.nnodes > 1 and not args.master:
            parser.error(f"--nnodes {self.nnodes} needs --master host:port (the node of rank 0's address)")
        self.timeout = _env_int("OAR_STORE_TIMEOUT", 900)
        if self.timeout < 1:
            parser.error(f"OAR_STORE_TIMEOUT={self.timeout}: must be a positive number of seconds")
        self.dtype, self.device_ids, self.nproc = _device_plan(args, parser)
        self.prefix = f"oar/launch/{args.job_id}"

    # -- the launcher store and this node's rank

    def connect(self):
        from oar.distributed import TCPStore
        a = self.args
        if a.master:
            host, port = _split_master(a.master)
            self.ip = a.host or _route_ip(host, port)
        else:  # one node: everything on loopback
            host, port, self.ip = "127.0.0.1", 0, a.host or "127.0.0.1"
        self.hosting = False
        if a.rank in (0, -1):
            try:  # the node that can listen on --master hosts the store (Paddle: the first to arrive)
                self.store = TCPStore(host, port, True, 0, self.timeout, wait_for_workers=False)
                self.hosting = True
            except (RuntimeError, ValueError) as e:
                if a.rank == 0 or not a.master:
                    raise LaunchError(f"node rank 0 hosts the launcher store at {host}:{port}, but: {e}") from None
        if not self.hosting:
            self._wait_for_master(host, port)
            self.store = TCPStore(host, port, False, 0, self.timeout, wait_for_workers=False)
        rank = 0 if self.hosting and a.rank == -1 else a.rank
        while True:
            if rank == -1:
                candidate = self.store.add(f"{self.prefix}/next_rank", 1)  # 1, 2, ...: 0 is the host's
            else:
                candidate = rank
            if candidate >= self.nnodes:
                raise LaunchError(f"more nodes joined job {a.job_id!r} than --nnodes {self.nnodes}")
            if self.store.add(f"{self.prefix}/claim/{candidate}", 1) == 1:
                break
            if rank != -1:
                raise LaunchError(f"node rank {rank} is already taken in job {a.job_id!r} (two nodes with one --rank?)")
        self.node_rank = candidate

    def _wait_for_master(self, host, port):
        # Probed from Python (the store's own retry loop would hold off SIGINT until its timeout).
        deadline = time.monotonic() + self.timeout
        while not self.interrupted:
            try:
                socket.create_connection((host, port), timeout=1).close()
                return
            except OSError as e:
                if time.monotonic() > deadline:
                    raise LaunchError(f"no launcher store at --master {host}:{port} after {self.timeout} s "
                                      f"(is node 0's launcher running?): {e}") from None
                time.sleep(0.2)
        raise LaunchError(f"got signal {self.interrupted} while waiting for --master {host}:{port}")

    # -- one generation

    def _key(self, gen, *parts):
        return "/".join([self.prefix, str(gen)] + [str(p) for p in parts])

    def _failed(self, gen):
        return self.store.check([self._key(gen, "failed")])

    def _publish_failure(self, gen, msg, code):
        if self.store.add(self._key(gen, "nfailed"), 1) == 1:  # the job's first failure is the one reported
            self.store.set(self._key(gen, "failed"), json.dumps({"msg": msg, "code": code}))

    def _failure(self, gen):
        f = json.loads(self.store.get(self._key(gen, "failed")))
        return f["msg"], f["code"]

    def _gather_nodes(self, gen):
        ports = [_free_port(self.ip) for _ in range(self.nproc)]
        info = {"ip": self.ip, "nproc": self.nproc, "endpoints": [_endpoint(self.ip, p) for p in ports]}
        if self.node_rank == 0:  # the workers' store: rank 0 hosts it on node 0, a new port every generation
            info["master"] = [self.ip, _free_port(self.ip)]
        self.store.set(self._key(gen, "node", self.node_rank), json.dumps(info))
        keys = [self._key(gen, "node", r) for r in range(self.nnodes)]
        deadline = time.monotonic() + self.timeout
        while not self.store.check(keys):
            if self.interrupted or self._failed(gen):
                return None
            if time.monotonic() > deadline:
                raise LaunchError(f"waited {self.timeout} s for {self.nnodes} nodes to join job "
                                  f"{self.args.job_id!r} at --master {self.args.master}")
            time.sleep(0.1)
        return [json.loads(self.store.get(k)) for k in keys]

    def _worker_envs(self, gen, nodes):
        world = sum(n["nproc"] for n in nodes)
        offset = sum(n["nproc"] for n in nodes[:self.node_rank])
        endpoints = [e for n in nodes for e in n["endpoints"]]
        mhost, mport = nodes[0]["master"]
        master = _endpoint(mhost, mport)
        envs = []
        for local in range(self.nproc):
            rank = offset + local
            e = dict(os.environ)
            e.update({
                # Paddle's names
                "PADDLE_MASTER": master, "PADDLE_GLOBAL_SIZE": str(world), "PADDLE_LOCAL_SIZE": str(self.nproc),
                "PADDLE_GLOBAL_RANK": str(rank), "PADDLE_LOCAL_RANK": str(local), "PADDLE_NNODES": str(self.nnodes),
                "PADDLE_CURRENT_ENDPOINT": endpoints[rank], "PADDLE_TRAINER_ID": str(rank),
                "PADDLE_TRAINERS_NUM": str(world), "PADDLE_RANK_IN_NODE": str(local),
                "PADDLE_TRAINER_ENDPOINTS": ",".join(endpoints), "PADDLE_JOB_ID": self.args.job_id,
                # the common (torchrun) names
                "RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(local),
                "LOCAL_WORLD_SIZE": str(self.nproc), "GROUP_RANK": str(self.node_rank),
                "MASTER_ADDR": mhost, "MASTER_PORT": str(mport),
                "OAR_RESTART_COUNT": str(gen),
            })
            if self.device_ids is None:
                e["PADDLE_DISTRI_BACKEND"] = "gloo"
            else:
                e[f"FLAGS_selected_{self.dtype}s"] = str(self.device_ids[local % len(self.device_ids)])
                if self.dtype != "gpu":  # a custom device: Paddle's collective backend for it
                    e.update(PADDLE_DISTRI_BACKEND="xccl", PADDLE_XCCL_BACKEND=self.dtype)
            if "OAR_GLOO_IFNAME" not in e and "OAR_GLOO_HOSTNAME" not in e:
                e["OAR_GLOO_HOSTNAME"] = self.ip  # Gloo listens where the other nodes reach this one
            envs.append(e)
        return envs, offset

    def _run_generation(self, gen):
        """(ok, message, exit code) of generation `gen` on this node."""
        nodes = self._gather_nodes(gen)
        if nodes is None:  # interrupted, or another node failed before this one started its workers
            if self.interrupted:
                self._publish_failure(gen, f"the launcher of node {self.node_rank} got signal {self.interrupted}",
                                      128 + self.interrupted)
            return (False,) + self._failure(gen)
        envs, offset = self._worker_envs(gen, nodes)
        os.makedirs(self.args.log_dir, exist_ok=True)
        logs = [os.path.join(self.args.log_dir, f"workerlog.{i}") for i in range(self.nproc)]
        if gen > 0:
            for path in logs:
                with open(path, "ab") as f:
                    f.write(f"---- oar.distributed.launch: restart {gen} ----\n".encode())
        pod = _Pod(_worker_command(self.args), envs, logs, self.args.log_overwrite and gen == 0)
        done_local = False
        last_check = 0.0
        try:
            while True:
                try:
                    local, code = pod.exits.get(timeout=_POLL_S)
                    pod.codes[local] = code
                    if code != 0:
                        msg = f"rank {offset + local} (node {self.node_rank}, local rank {local}) {_describe(code)}"
                        self._publish_failure(gen, msg, _exit_code(code))
                        _say(f"{msg}; the last lines of {logs[local]}:\n{_tail(logs[local])}")
                        pod.stop()
                        return (False,) + self._failure(gen)
                    continue  # drain every exit before looking at the store
                except queue.Empty:
                    pass
                pod.echo()
                if self.interrupted:
                    sig = self.interrupted
                    self._publish_failure(gen, f"the launcher of node {self.node_rank} got signal {sig}", 128 + sig)
                    pod.stop()
                    return (False,) + self._failure(gen)
                if pod.all_exited() and not done_local:
                    self.store.set(self._key(gen, "done", self.node_rank), "1")
                    done_local = True
                now = time.monotonic()
                if now - last_check >= 0.5 or done_local:
                    last_check = now
                    if self._failed(gen):
                        pod.stop()
                        return (False,) + self._failure(gen)
                    if done_local and self.store.check([self._key(gen, "done", r) for r in range(self.nnodes)]):
                        pod.stop()  # sweeps what the workers left running in their groups
                        return True, "", 0
        except RuntimeError as e:  # the launcher store is gone (node 0's launcher died)
            pod.stop()
            raise LaunchError(f"lost the launcher store: {e}") from None

    def _leave(self, gen):
        """The job is over: the host keeps the launcher store up until every node has read the outcome."""
        try:
            n = self.store.add(self._key(gen, "left"), 1)
            deadline = time.monotonic() + _LEAVE_WAIT_S
            while self.hosting and n < self.nnodes and time.monotonic() < deadline and not self.interrupted:
                time.sleep(0.1)
                n = self.store.add(self._key(gen, "left"), 0)
        except RuntimeError:
            pass

    def run(self):
        gen = 0
        while True:
            ok, msg, code = self._run_generation(gen)
            if ok:
                self._leave(gen)
                return 0
            if gen < self.args.max_restart and not self.interrupted:
                gen += 1
                _say(f"job failed: {msg}; restart {gen} of {self.args.max_restart}")
                continue
            self._leave(gen)
            _say(f"job failed: {msg}" + (f" (after {gen} restart(s))" if gen else ""))
            return code


def _tail(path, lines=20):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 8192))
            return b"\n".join(f.read().splitlines()[-lines:]).decode(errors="replace")
    except OSError:
        return ""


def launch(argv=None):
    """Runs the launcher with `argv` (default: sys.argv[1:]); returns the exit status: 0, the failed worker's
    exit code (128 + signal when it was killed) or 1 when the launcher itself failed."""
    parser = _parser()
    args = parser.parse_args(argv)
    launcher = _Launcher(args, parser)

    def on_signal(signum, _frame):
        launcher.interrupted = signum

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        launcher.connect()
        return launcher.run()
    except (LaunchError, RuntimeError, ValueError) as e:  # RuntimeError / ValueError: the launcher store's
        _say(str(e))
        return 1
