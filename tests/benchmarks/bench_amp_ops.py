"""bfloat16 against float32 on the CPU, op by op, side by side in one run: oar bf16, oar fp32, torch bf16,
torch fp32, and oneDNN bf16 called directly (./build/bin/oar_bench_lowp, tests/benchmarks/bench_lowp.cc)
where the problem is one of its own.

Run by hand with the Python that has oar installed:
    python tests/benchmarks/bench_amp_ops.py [--threads 2] [--torch-python /work/venv_gloo_bench/bin/python]
torch runs in its own interpreter (--torch-python; skipped when it cannot import torch) and reports
back as JSON. Not a test and not part of CI. Times are the best of several repeats, in milliseconds.
"""
import argparse
import json
import os
import subprocess
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# (op, flop count or None)
CASES = [
    ("matmul 1024^3", 2.0 * 1024 ** 3),
    ("matmul 2048^3", 2.0 * 2048 ** 3),
    ("bmm 16x256x512x256", 2.0 * 16 * 256 * 512 * 256),
    ("linear+bias 4096x1024x1024", 2.0 * 4096 * 1024 * 1024),
    ("conv3x3 64ch N32 56x56 fwd", 2.0 * 32 * 64 * 56 * 56 * 64 * 9),
    ("conv3x3 64ch N32 56x56 fwd+bwd", 3 * 2.0 * 32 * 64 * 56 * 56 * 64 * 9),
    ("add 4M", None),
    ("gelu 4M", None),
    ("exp 4M", None),
    ("sum 4M", None),
    ("softmax 4096x1024", None),
    ("layer_norm 4096x1024", None),
    ("cast fp32->bf16 4M", None),
]


def best_ms(fn, number, repeat=5):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def inputs(np, case):
    rng = np.random.default_rng(0)
    r = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    if case.startswith("matmul"):
        n = int(case.split()[1].split("^")[0])
        return [r(n, n), r(n, n)]
    if case.startswith("bmm"):
        return [r(16, 256, 512), r(16, 512, 256)]
    if case.startswith("linear"):
        return [r(4096, 1024), r(1024, 1024) * 0.03, r(1024)]
    if case.startswith("conv"):
        return [r(32, 64, 56, 56), r(64, 64, 3, 3) * 0.05]
    if case.startswith("softmax") or case.startswith("layer_norm"):
        return [r(4096, 1024), r(1024), r(1024)]
    return [r(1 << 22), r(1 << 22)]


def number_for(case):
    return 2 if ("2048" in case or "conv" in case or "linear" in case) else 5


def run_oar(dtypes):
    import numpy as np

    import oar
    import oar.nn.functional as F
    out = {}
    for case, _ in CASES:
        for dt in dtypes:
            arrs = inputs(np, case)
            if case.startswith("cast"):
                if dt != "bfloat16":
                    continue
                x = oar.to_tensor(arrs[0])
                out[(case, dt)] = best_ms(lambda: x.astype("bfloat16"), 10)
                continue
            ts = [oar.to_tensor(a).astype(dt) for a in arrs]
            fn = oar_fn(oar, F, case, ts)
            out[(case, dt)] = best_ms(fn, number_for(case))
    return out


def oar_fn(oar, F, case, ts):
    if case.startswith("matmul") or case.startswith("bmm"):
        return lambda: oar.matmul(ts[0], ts[1])
    if case.startswith("linear"):
        return lambda: F.linear(ts[0], ts[1], ts[2])
    if case.endswith("fwd"):
        return lambda: F.conv2d(ts[0], ts[1], padding=1)
    if case.endswith("fwd+bwd"):
        x, w = ts
        x.stop_gradient = False
        w.stop_gradient = False

        def step():
            F.conv2d(x, w, padding=1).sum().backward()
            x.clear_gradient()
            w.clear_gradient()
        return step
    op = case.split()[0]
    if op == "add":
        return lambda: ts[0] + ts[1]
    if op == "gelu":
        return lambda: F.gelu(ts[0])
    if op == "exp":
        return lambda: oar.exp(ts[0])
    if op == "sum":
        return lambda: oar.sum(ts[0])
    if op == "softmax":
        return lambda: F.softmax(ts[0], axis=-1)
    if op == "layer_norm":
        return lambda: F.layer_norm(ts[0], [1024], weight=ts[1], bias=ts[2])
    raise ValueError(case)


def run_torch(threads):
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    import torch.nn.functional as TF
    out = {}
    torch_dt = {"float32": torch.float32, "bfloat16": torch.bfloat16}
    for case, _ in CASES:
        for dt in ("float32", "bfloat16"):
            arrs = inputs(np, case)
            if case.startswith("cast"):
                if dt != "bfloat16":
                    continue
                x = torch.from_numpy(arrs[0])
                out[case + "|" + dt] = best_ms(lambda: x.to(torch.bfloat16), 10)
                continue
            ts = [torch.from_numpy(a).to(torch_dt[dt]) for a in arrs]
            op = case.split()[0]
            if op in ("matmul", "bmm"):
                fn = lambda: torch.matmul(ts[0], ts[1])  # noqa: E731
            elif op == "linear+bias":
                wt = ts[1].t().contiguous()  # torch's weight is [out, in]
                fn = lambda: TF.linear(ts[0], wt, ts[2])  # noqa: E731
            elif case.endswith("fwd"):
                fn = lambda: TF.conv2d(ts[0], ts[1], padding=1)  # noqa: E731
            elif case.endswith("fwd+bwd"):
                x, w = ts[0].requires_grad_(), ts[1].requires_grad_()

                def fn():
                    TF.conv2d(x, w, padding=1).sum().backward()
                    x.grad = None
                    w.grad = None
            elif op == "add":
                fn = lambda: ts[0] + ts[1]  # noqa: E731
            elif op == "gelu":
                fn = lambda: TF.gelu(ts[0])  # noqa: E731
            elif op == "exp":
                fn = lambda: torch.exp(ts[0])  # noqa: E731
            elif op == "sum":
                fn = lambda: torch.sum(ts[0])  # noqa: E731
            elif op == "softmax":
                fn = lambda: torch.softmax(ts[0], -1)  # noqa: E731
            elif op == "layer_norm":
                fn = lambda: TF.layer_norm(ts[0], [1024], ts[1], ts[2])  # noqa: E731
            out[case + "|" + dt] = best_ms(fn, number_for(case))
    return out


def run_onednn(threads):
    """oneDNN called directly (bench_lowp.cc): {case|dtype: ms}."""
    exe = os.path.join(ROOT, "build", "bin", "oar_bench_lowp")
    if not os.path.exists(exe):
        return {}, "not built ({})".format(exe)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    r = subprocess.run([exe, "--benchmark_format=json", "--benchmark_filter=^BM_(MatmulDirect|ConvDirect)/"], env=env, capture_output=True,
                       text=True)
    if r.returncode != 0:
        return {}, r.stderr.strip()[-300:]
    out = {}
    for b in json.loads(r.stdout)["benchmarks"]:
        if b.get("error_occurred"):
            continue
        name = b["name"]  # BM_MatmulDirect/bf16/1024/real_time, BM_ConvDirect/f32/real_time
        parts = name.split("/")
        dt = {"bf16": "bfloat16", "f32": "float32", "f16": "float16"}[parts[1]]
        ms = b["real_time"] if b["time_unit"] == "ms" else b["real_time"] / 1e6
        if parts[0] == "BM_MatmulDirect":
            out["matmul {}^3|{}".format(parts[2], dt)] = ms
        else:
            out["conv3x3 64ch N32 56x56 fwd|" + dt] = ms
    return out, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--torch-python", default="/work/venv_gloo_bench/bin/python")
    ap.add_argument("--torch-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(a.threads)
    if a.torch_only:
        print(json.dumps(run_torch(a.threads)))
        return
    oar_ms = run_oar(["float32", "bfloat16"])
    torch_ms, torch_note = {}, None
    try:
        r = subprocess.run([a.torch_python, os.path.abspath(__file__), "--torch-only", "--threads", str(a.threads)],
                           capture_output=True, text=True, env=dict(os.environ), timeout=1800)
        if r.returncode == 0:
            torch_ms = json.loads(r.stdout.strip().splitlines()[-1])
        else:
            torch_note = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"
    except (OSError, subprocess.TimeoutExpired) as e:
        torch_note = str(e)
    dnnl_ms, dnnl_note = run_onednn(a.threads)

    def cell(v, flops):
        if v is None:
            return "-"
        return "{:.2f}".format(v) + (" ({:.0f})".format(flops / v / 1e6) if flops else "")

    print("CPU, {} threads; ms (GFLOP/s where the op has a flop count)".format(a.threads))
    head = ["op", "oar fp32", "oar bf16", "torch fp32", "torch bf16", "oneDNN bf16", "oar bf16/fp32"]
    rows = [head]
    for case, flops in CASES:
        f32, b16 = oar_ms.get((case, "float32")), oar_ms.get((case, "bfloat16"))
        rows.append([case, cell(f32, flops), cell(b16, flops), cell(torch_ms.get(case + "|float32"), flops),
                     cell(torch_ms.get(case + "|bfloat16"), flops), cell(dnnl_ms.get(case + "|bfloat16"), flops),
                     "{:.2f}x".format(f32 / b16) if f32 and b16 else "-"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    if torch_note:
        print("torch: " + torch_note)
    if dnnl_note:
        print("oneDNN direct: " + dnnl_note)
    if "matmul 1024^3|float32" in dnnl_ms:
        print("oneDNN fp32 direct: matmul 1024^3 {:.2f} ms, 2048^3 {:.2f} ms, conv {:.2f} ms".format(
            dnnl_ms["matmul 1024^3|float32"], dnnl_ms.get("matmul 2048^3|float32", float("nan")),
            dnnl_ms.get("conv3x3 64ch N32 56x56 fwd|float32", float("nan"))))


if __name__ == "__main__":
    sys.exit(main())
