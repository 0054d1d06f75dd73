"""all_reduce bus bandwidth with two processes, 1 KiB .. 256 MiB of float32, side by side in one run:
the cpu plugin's Gloo collectives through the ABI (oar), Gloo called directly (gloo), and
torch.distributed with its gloo backend (torch, when importable). Not a test.

    python tests/benchmarks/bench_allreduce.py --bench build/bin/oar_bench_allreduce_gloo \\
        --plugin build/lib/oar/plugins/liboar_plugin_cpu.so [--torch-python /path/to/python-with-torch] [--max-mib 256]

Bus bandwidth = bytes / time * 2 (n - 1) / n (for n = 2 it equals the algorithm bandwidth), the measure
nccl-tests use; both ranks print, rank 0's numbers are reported.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile

_TORCH = r"""
import os, sys, time, torch, torch.distributed as dist
rank, port, max_bytes = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + port, rank=rank, world_size=2)
buf = torch.ones(max_bytes // 4)
b = 1024
while b <= max_bytes:
    x = buf[: b // 4]
    iters = max(3, min(200, (512 << 20) // b))
    dist.all_reduce(x)
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    s = (time.perf_counter() - t0) / iters
    print("torch", b, "%.9f" % s, "%.3f" % (b / s / 1e9), flush=True)
    b *= 4
dist.destroy_process_group()
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two(cmd0, cmd1):
    p0 = subprocess.Popen(cmd0, stdout=subprocess.PIPE, text=True)
    p1 = subprocess.Popen(cmd1, stdout=subprocess.DEVNULL)
    out, _ = p0.communicate()
    p1.wait()
    if p0.returncode or p1.returncode:
        raise SystemExit("a rank failed: {} / {}".format(p0.returncode, p1.returncode))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--torch-python", default=sys.executable)
    ap.add_argument("--max-mib", type=int, default=256)
    a = ap.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as d:
        out = two([a.bench, a.plugin, "0", "2", d, str(a.max_mib)], [a.bench, a.plugin, "1", "2", d, str(a.max_mib)])
    have_torch = subprocess.run([a.torch_python, "-c", "import torch.distributed"], capture_output=True).returncode == 0
    if have_torch:
        port = str(free_port())
        mb = str(a.max_mib << 20)
        out += two([a.torch_python, "-c", _TORCH, "0", port, mb], [a.torch_python, "-c", _TORCH, "1", port, mb])
    for line in out.splitlines():
        impl, b, s, bus = line.split()
        rows.setdefault(int(b), {})[impl] = (float(s), float(bus))
    impls = ["oar", "gloo"] + (["torch"] if have_torch else [])
    print("| size | " + " | ".join("{} us / GB/s".format(i) for i in impls) + " |")
    print("|---|" + "---|" * len(impls))
    for b in sorted(rows):
        size = "{} KiB".format(b >> 10) if b < (1 << 20) else "{} MiB".format(b >> 20)
        cells = ["{:.1f} / {:.3f}".format(rows[b][i][0] * 1e6, rows[b][i][1]) if i in rows[b] else "-" for i in impls]
        print("| {} | {} |".format(size, " | ".join(cells)))


if __name__ == "__main__":
    main()
