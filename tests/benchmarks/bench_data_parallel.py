"""Data-parallel training throughput, 1 process vs 2 (oar.DataParallel on Gloo) vs torch DDP (gloo), side by
side in one run, for LeNet and an MLP on random MNIST-shaped data; peak RSS per rank; and the overlap of the
backward computation with the bucket all-reduces (oar's reducer trace). Not a test.

    python tests/benchmarks/bench_data_parallel.py [--torch-python /path/to/python-with-torch]
        [--steps 30] [--batch 64] [--threads 1]

Every process uses --threads intra-op threads (OMP_NUM_THREADS and torch.set_num_threads), so 2 processes
use twice the cores of 1: on a 2-core machine the 2-process numbers are the best case for scaling.
images/s counts every rank's images (global batch = batch x processes) over the timed steps.
Overlap (oar, 2 processes): per step, the backward graph's time, how many buckets were launched before it
ended, and the exposed communication (from the end of the graph until every bucket is reduced).
"""
import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import time

MODELS = ("lenet", "mlp")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _oar_worker(a):
    import numpy as np
    import oar
    import oar.distributed as dist
    import oar.nn as nn
    oar.set_device("cpu")
    if a.world > 1:
        dist.init_parallel_env()
    oar.seed(0)
    if a.model == "lenet":
        net = oar.vision.models.LeNet()
        shape = [a.batch, 1, 28, 28]
    else:
        net = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                            nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
        shape = [a.batch, 784]
    kw = {}
    if a.comm_mb:
        kw = {"comm_buffer_size": a.comm_mb, "last_comm_buffer_size": a.comm_mb / 4}
    model = oar.DataParallel(net, **kw) if a.world > 1 else net
    opt = oar.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
    rng = np.random.RandomState(a.rank)
    x = oar.to_tensor(rng.standard_normal(shape).astype("float32"))
    y = oar.to_tensor(rng.randint(0, 10, size=(a.batch,)).astype("int64"))
    trace = None
    nbuckets = 0
    if a.world > 1 and model._reducer is not None:
        nbuckets = len(model._reducer.buckets)
    steps = []
    for i in range(a.warmup + a.steps):
        if i == a.warmup and a.world > 1:
            trace = model._reducer.trace = []
        t0 = time.perf_counter()
        loss = nn.functional.cross_entropy(model(x), y)
        tb = time.perf_counter()
        loss.backward()
        opt.step()
        opt.clear_grad()
        float(loss)
        if i >= a.warmup:
            steps.append((t0, tb, time.perf_counter()))
    if a.world > 1:
        dist.barrier()
    elapsed = steps[-1][2] - steps[0][0]
    out = {"images_per_s": a.batch * a.world * a.steps / elapsed, "rss_mb": _rss_mb(), "nbuckets": nbuckets}
    if trace is not None:
        # Split the trace into steps by "reduced" events; relate them to each step's backward start.
        per, cur = [], []
        for ev in trace:
            cur.append(ev)
            if ev[0] == "reduced":
                per.append(cur)
                cur = []
        graph, exposed, early = [], [], []
        for (t0, tb, _), evs in zip(steps, per):
            done = next(t for e, _, t in evs if e == "graph_done")
            red = next(t for e, _, t in evs if e == "reduced")
            graph.append((done - tb) * 1e3)
            exposed.append((red - done) * 1e3)
            early.append(sum(1 for e, _, t in evs if e == "launch" and t < done))
        out.update(backward_ms=float(np.median(graph)), exposed_comm_ms=float(np.median(exposed)),
                   launched_before_graph_end=float(np.median(early)))
        # The last step's timeline, ms from the start of backward.
        tb = steps[len(per) - 1][1]
        out["timeline"] = " ".join(f"{e}{'' if k < 0 else k}@{(t - tb) * 1e3:.1f}" for e, k, t in per[-1])
    if a.world > 1:
        dist.destroy_process_group()
    return out


def _torch_worker(a):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    torch.set_num_threads(a.threads)
    if a.world > 1:
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % a.port, rank=a.rank,
                                world_size=a.world)
    torch.manual_seed(0)
    if a.model == "lenet":  # the same LeNet as oar.vision.models.LeNet (Paddle's)
        net = nn.Sequential(nn.Conv2d(1, 6, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Conv2d(6, 16, 5),
                            nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(), nn.Linear(400, 120),
                            nn.Linear(120, 84), nn.Linear(84, 10))
        shape = [a.batch, 1, 28, 28]
    else:
        net = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                            nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
        shape = [a.batch, 784]
    kw = {"bucket_cap_mb": a.comm_mb} if a.comm_mb else {}
    model = nn.parallel.DistributedDataParallel(net, **kw) if a.world > 1 else net
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(a.rank)
    x = torch.randn(shape, generator=g)
    y = torch.randint(0, 10, (a.batch,), generator=g)
    for i in range(a.warmup + a.steps):
        if i == a.warmup:
            t0 = time.perf_counter()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        float(loss)
    elapsed = time.perf_counter() - t0
    if a.world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return {"images_per_s": a.batch * a.world * a.steps / elapsed, "rss_mb": _rss_mb()}


def worker(a):
    os.environ["PADDLE_TRAINER_ID"] = str(a.rank)
    os.environ["PADDLE_TRAINERS_NUM"] = str(a.world)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(a.port)
    res = _oar_worker(a) if a.framework == "oar" else _torch_worker(a)
    res["rank"] = a.rank
    print("RESULT " + json.dumps(res), flush=True)


def run(python, framework, model, world, a, comm_mb=0.0):
    port = free_port()
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    procs = [subprocess.Popen([python, os.path.abspath(__file__), "--worker", "--framework", framework, "--model",
                               model, "--rank", str(r), "--world", str(world), "--port", str(port), "--steps",
                               str(a.steps), "--batch", str(a.batch), "--threads", str(a.threads),
                               "--comm-mb", str(comm_mb)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for r in range(world)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=900)
        if p.returncode != 0:
            raise RuntimeError(f"{framework} {model} x{world} failed:\n{err[-3000:]}")
        results.extend(json.loads(line[7:]) for line in out.splitlines() if line.startswith("RESULT "))
    results.sort(key=lambda r: r["rank"])
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--framework", default="oar")
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--comm-mb", type=float, default=0.0)
    ap.add_argument("--torch-python", default=None)
    ap.add_argument("--models", default=",".join(MODELS))
    a = ap.parse_args()
    if a.worker:
        worker(a)
        return
    torch_py = a.torch_python
    if torch_py and subprocess.run([torch_py, "-c", "import torch.distributed"], capture_output=True).returncode:
        print(f"({torch_py} has no torch.distributed: torch skipped)")
        torch_py = None
    print(f"batch {a.batch} per process, {a.steps} timed steps (+{a.warmup} warm-up), {a.threads} thread(s) per "
          f"process, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"{'model':6} {'impl':26} {'procs':>5} {'images/s':>9} {'scaling':>7} {'RSS MB/rank':>12}  overlap")
    timelines = []
    for model in a.models.split(","):
        configs = [("oar", sys.executable, 0.0, "oar")]
        # One default bucket (25 MB, the last reduced 1 MB) holds all of LeNet, two the MLP: smaller ones
        # show the overlap.
        small = 0.05 if model == "lenet" else 2.0
        configs.append(("oar", sys.executable, small, f"oar, {small:g} MB buckets"))
        if torch_py:
            configs.append(("torch", torch_py, 0.0, "torch DDP gloo"))
        single = {}
        for fw, py, comm, name in configs:
            for world in (1, 2):
                if world == 1 and fw in single:
                    continue
                res = run(py, fw, model, world, a, comm)
                ips = res[0]["images_per_s"]
                if world == 1:
                    single[fw] = ips
                    label = fw + " (1 process)"
                else:
                    label = name
                rss = "/".join("%.0f" % r["rss_mb"] for r in res)
                ov = ""
                if "exposed_comm_ms" in res[0]:
                    r = res[0]
                    ov = (f"{r['nbuckets']} buckets, {r['launched_before_graph_end']:.0f} launched during backward "
                          f"({r['backward_ms']:.1f} ms), exposed comm {r['exposed_comm_ms']:.1f} ms/step")
                scale = ips / single[fw] if world == 2 else 1.0
                print(f"{model:6} {label:26} {world:>5} {ips:>9.0f} {scale:>6.2f}x {rss:>12}  {ov}", flush=True)
                if "timeline" in res[0]:
                    timelines.append(f"{model} {label}: {res[0]['timeline']}")
    print("last step of each oar 2-process run, ms from the start of backward (launchK: bucket K's all-reduce "
          "queued; graph_done: backward's graph finished; reduced: every bucket reduced):")
    for t in timelines:
        print("  " + t)


if __name__ == "__main__":
    main()
