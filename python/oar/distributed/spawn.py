"""oar.distributed.spawn: runs a function in `nprocs` new processes, one rank each (Paddle's spawn)."""
import os
import socket
import traceback
# multiprocessing is imported where it is used: it costs `import oar` several ms (decision 111).

__all__ = ["spawn", "MultiprocessContext"]


def _free_port(host):
    # The port is free now; rank 0 binds it again when its store starts (a tiny race, as in Paddle's spawn).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _worker(func, args, env, device, conn):
    os.environ.update(env)
    try:
        import oar
        if device is not None:
            oar.set_device(device)
        func(*args)
    except BaseException:  # noqa: B902 - every failure goes to the parent, then the exit code says so
        try:
            conn.send(traceback.format_exc())
        finally:
            conn.close()
        raise SystemExit(1)
    conn.close()


class MultiprocessContext:
    """The spawned processes; join() waits for them and raises when one failed."""

    def __init__(self, processes, conns):
        self.processes = processes
        self._conns = conns

    def join(self, timeout=None):
        """Waits until every process has ended (True), or `timeout` seconds passed (False). A process that
        failed makes join stop the others and raise, naming its rank and carrying its traceback."""
        import multiprocessing.connection
        pending = {p.sentinel: (r, p) for r, p in enumerate(self.processes) if p.exitcode is None}
        while pending:
            ready = multiprocessing.connection.wait(list(pending), timeout)
            if not ready:
                return False
            for s in ready:
                rank, p = pending.pop(s)
                p.join()
                if p.exitcode != 0:
                    self._fail(rank, p.exitcode)
        return True

    def _fail(self, rank, exitcode):
        for p in self.processes:  # the others may wait for the failed rank in a collective
            if p.exitcode is None:
                p.terminate()
        for p in self.processes:
            p.join()
        msg = ""
        if self._conns[rank].poll():
            try:
                msg = self._conns[rank].recv()
            except EOFError:
                pass
        if msg:
            raise RuntimeError(f"oar.distributed.spawn: process of rank {rank} raised:\n{msg}")
        raise RuntimeError(f"oar.distributed.spawn: process of rank {rank} exited with code {exitcode}")


def _default_nprocs(device_type):
    import multiprocessing
    import oar
    if device_type == "cpu":
        return multiprocessing.cpu_count()
    return len([d for d in oar._C.get_available_device() if d.split(":")[0] == device_type]) or 1


def spawn(func, args=(), nprocs=-1, join=True, daemon=False, **options):
    """Starts `nprocs` processes (multiprocessing's spawn context) running `func(*args)`, rank r with
    PADDLE_TRAINER_ID / RANK = r, PADDLE_TRAINERS_NUM / WORLD_SIZE = nprocs and a free port for rank 0's
    store, on the current device type (device r % count). `nprocs=-1`: one per device (cpu: one per core).
    join=True waits and raises if a process failed; join=False returns the MultiprocessContext."""
    import oar
    if not callable(func):
        raise TypeError(f"spawn: func must be callable, got {type(func).__name__}")
    if not isinstance(args, tuple):
        raise TypeError(f"spawn: args must be a tuple, got {type(args).__name__}")
    dev = oar.get_device()
    dtype = dev.split(":")[0]
    if nprocs == -1:
        nprocs = _default_nprocs(dtype)
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"spawn: nprocs must be a positive int (or -1), got {nprocs!r}")
    host = options.get("ip", "127.0.0.1")
    port = _free_port(host)
    count = max(1, len([d for d in oar._C.get_available_device() if d.split(":")[0] == dtype]))
    endpoints = ",".join(f"{host}:{port + r}" for r in range(nprocs))
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    processes, conns = [], []
    for rank in range(nprocs):
        env = {"PADDLE_TRAINER_ID": str(rank), "PADDLE_TRAINERS_NUM": str(nprocs), "RANK": str(rank),
               "WORLD_SIZE": str(nprocs), "MASTER_ADDR": host, "MASTER_PORT": str(port),
               "PADDLE_MASTER": f"{host}:{port}", "PADDLE_TRAINER_ENDPOINTS": endpoints,
               "PADDLE_CURRENT_ENDPOINT": f"{host}:{port + rank}", "PADDLE_LOCAL_RANK": str(rank),
               "LOCAL_RANK": str(rank)}
        device = "cpu" if dtype == "cpu" else f"{dtype}:{rank % count}"
        recv_end, send_end = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_worker, args=(func, args, env, device, send_end), daemon=daemon)
        p.start()
        send_end.close()
        processes.append(p)
        conns.append(recv_end)
    context = MultiprocessContext(processes, conns)
    if not join:
        return context
    context.join()
    return context
