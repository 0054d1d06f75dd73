"""GPU benchmark: oar beside PyTorch, in the same process, on the same card.

    python tests/benchmarks/bench_gpu.py [--device gpu:0] [--only matmul,conv,resnet50,overhead,batchnorm,cudagraph]
        [--quick]
        [--json out.json]

What it measures (each case after warm-ups; every timing is bracketed by a device synchronize, the median
of several repeats; oar syncs with oar.device.synchronize, torch with torch.cuda.synchronize):
  matmul     C = A @ B, square 4096 and 8192, in bfloat16, float16 and float32: TFLOP/s (2 n^3 per product).
             float32 is compared like for like: torch's TF32 switches (matmul and cuDNN) are set to
             oar's policy, exact float32 unless OAR_ALLOW_TF32=1 (docs/decisions.md, 44).
  conv       ResNet's 3x3, 64 -> 64 channels at 56x56, batch 64, float32, forward + backward: ms and TFLOP/s
             (3 x the forward's 2*N*H*W*Cout*Cin*9), TF32 as for matmul.
  resnet50   a ResNet-50 training step (batch 64, 224x224, SGD with momentum) in images/s: float32 on both
             sides, then oar's auto_cast bfloat16 at O1 and at O2 (decorate) beside torch's autocast bfloat16.
  overhead   eager small-op overhead: microseconds per `a + b` on 1-element device tensors, 2000 ops, one
             synchronize at the end.
  batchnorm  BatchNorm forward + backward (training statistics) on [64, 256, 56, 56] and [64, 64, 112, 112],
             float32 and bfloat16 x (float32 weights and statistics), ms: "op" rows call the batch_norm and
             batch_norm_grad ops directly (oar's kernels alone) beside torch's functional batch_norm with
             autograd's backward (cuDNN); "layer" rows time BatchNorm2D / BatchNorm2d (the path a training
             step takes). The note gives oar's bandwidth on the op rows: the bytes of the 8 tensor passes its
             kernels make (forward: x for the statistics, then x and out; backward: x and dy for the sums,
             then x, dy and dx) over the time.
  cudagraph  to_static training steps (forward + backward + Adam step, batch 8) of bench_jit's tiny MLP (width 16,
             32 layers) and Transformer encoder, plain and through wrap_cuda_graph (forward and backward
             captured once, replayed; docs/device_graph.md): ms/step of each and the speedup; the note
             says whether the losses of the first steps agree within 1e-5. oar only (torch column empty).
torch runs only where it is importable and sees CUDA (and the device is a gpu); otherwise its columns say
why. --quick shrinks every size (for dry runs on the CPU or sim). Not a test: nothing here asserts speed.
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

import numpy as np


def _torch(device):
    """torch, or the reason it is not used."""
    if not device.startswith("gpu"):
        return None, "device {} is not a gpu".format(device)
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return None, "torch not importable: {}".format(e)
    if not torch.cuda.is_available():
        return None, "torch {} sees no CUDA device".format(torch.__version__)
    return torch, None


def _time(fn, sync, warmup, repeats, inner):
    """Median seconds of one call of fn, over `repeats` windows of `inner` calls, each bracketed by sync."""
    for _ in range(warmup):
        fn()
    sync()
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        samples.append((time.perf_counter() - t) / inner)
    return statistics.median(samples)


class Bench:
    def __init__(self, device, quick):
        import oar
        self.oar = oar
        self.device = device
        self.quick = quick
        oar.set_device(device)
        self.torch, self.torch_reason = _torch(device)
        self.results = []
        # oar's float32 policy (the gpu plugin reads OAR_ALLOW_TF32 once): torch is set to the same.
        self.tf32 = os.environ.get("OAR_ALLOW_TF32") == "1"
        if self.torch is not None:
            self.torch.backends.cuda.matmul.allow_tf32 = self.tf32
            self.torch.backends.cudnn.allow_tf32 = self.tf32

    def osync(self):
        self.oar.device.synchronize(self.device)

    def tsync(self):
        self.torch.cuda.synchronize()

    def add(self, case, metric, oar_value=None, torch_value=None, note="", oar_error=None, torch_error=None):
        r = {"case": case, "metric": metric, "oar": oar_value, "torch": torch_value, "note": note}
        if oar_error:
            r["oar_error"] = oar_error
        if torch_error or (self.torch is None and torch_value is None):
            r["torch_error"] = torch_error or self.torch_reason
        if oar_value and torch_value:
            r["oar_vs_torch"] = oar_value / torch_value
        self.results.append(r)
        print(self.row(r))
        sys.stdout.flush()

    @staticmethod
    def row(r):
        def v(x):
            return "{:>12.3f}".format(x) if isinstance(x, float) else "{:>12}".format("-" if x is None else x)
        ratio = "{:>9.2f}".format(r["oar_vs_torch"]) if "oar_vs_torch" in r else "{:>9}".format("-")
        errs = "; ".join("{}: {}".format(k, r[k]) for k in ("oar_error", "torch_error") if k in r)
        return "{:<42} {:<10} {} {} {} {}{}".format(r["case"], r["metric"], v(r["oar"]), v(r["torch"]), ratio,
                                                   r["note"], ("  [" + errs + "]") if errs else "")

    def _both(self, case, metric, oar_fn, torch_fn, note=""):
        """Runs each side (a function returning the metric), recording an error instead of raising."""
        vals, errs = {}, {}
        for side, fn in (("oar", oar_fn), ("torch", torch_fn)):
            if fn is None or (side == "torch" and self.torch is None):
                continue
            try:
                vals[side] = fn()
            except Exception as e:  # noqa: BLE001 -- report it and go on
                traceback.print_exc()
                errs[side] = "{}: {}".format(type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        self.add(case, metric, vals.get("oar"), vals.get("torch"), note, errs.get("oar"), errs.get("torch"))

    # ---- cases ----------------------------------------------------------------------------------------
    def overhead(self):
        n = 200 if self.quick else 2000
        oar = self.oar

        def o():
            a, b = oar.ones([1]), oar.ones([1])
            return 1e6 * _time(lambda: a + b, self.osync, 50, 5, n)

        def t():
            torch = self.torch
            a, b = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
            return 1e6 * _time(lambda: a + b, self.tsync, 50, 5, n)
        self._both("eager a+b (1 element)", "us/op", o, t, "lower is better")

    def matmul(self):
        oar = self.oar
        sizes = (256, 512) if self.quick else (4096, 8192)
        for dtype in ("bfloat16", "float16", "float32"):
            for n in sizes:
                flops = 2.0 * n ** 3
                inner = 2 if self.quick else (10 if n >= 8192 else 30)

                def o():
                    a = oar.randn([n, n]).astype(dtype)
                    b = oar.randn([n, n]).astype(dtype)
                    return flops / _time(lambda: oar.matmul(a, b), self.osync, 3, 5, inner) / 1e12

                def t():
                    torch = self.torch
                    dt = getattr(torch, dtype)
                    a = torch.randn(n, n, device="cuda", dtype=dt)
                    b = torch.randn(n, n, device="cuda", dtype=dt)
                    return flops / _time(lambda: torch.matmul(a, b), self.tsync, 3, 5, inner) / 1e12
                note = "TF32 {} for both".format("on" if self.tf32 else "off") if dtype == "float32" else ""
                self._both("matmul {} {}^2".format(dtype, n), "TFLOP/s", o, t, note)
            self._free()

    def conv(self):
        oar = self.oar
        n, c, hw = (4, 16, 28) if self.quick else (64, 64, 56)
        flops = 3 * 2.0 * n * hw * hw * c * c * 9  # forward + the two backward convolutions
        x_np = np.random.default_rng(0).standard_normal((n, c, hw, hw)).astype(np.float32)
        inner = 2 if self.quick else 10

        def o():
            layer = oar.nn.Conv2D(c, c, 3, padding=1)
            x = oar.to_tensor(x_np, stop_gradient=False)

            def step():
                y = layer(x)
                y.mean().backward()
                layer.clear_gradients()
                x.clear_gradient()
            return _time(step, self.osync, 3, 5, inner)

        def t():
            torch = self.torch
            layer = torch.nn.Conv2d(c, c, 3, padding=1).cuda()
            x = torch.from_numpy(x_np).cuda().requires_grad_()

            def step():
                y = layer(x)
                y.mean().backward()
                layer.zero_grad(set_to_none=True)
                x.grad = None
            return _time(step, self.tsync, 3, 5, inner)
        before = len(self.results)
        self._both("conv3x3 {}->{} {}x{} b{} f32 fwd+bwd".format(c, c, hw, hw, n), "ms", lambda: 1e3 * o(),
                   (lambda: 1e3 * t()) if self.torch else None, "lower is better")
        r = self.results[before]
        for side in ("oar", "torch"):
            if r[side]:
                r[side + "_tflops"] = flops / (r[side] / 1e3) / 1e12
        note = "TFLOP/s: oar {}, torch {}".format(*("{:.1f}".format(r[s + "_tflops"]) if s + "_tflops" in r else "-"
                                                     for s in ("oar", "torch")))
        note += "; TF32 {} for both".format("on" if self.tf32 else "off")
        r["note"] += "; " + note
        print("    " + note)
        self._free()

    def resnet50(self):
        oar = self.oar
        b, img = (2, 64) if self.quick else (64, 224)
        steps = 2 if self.quick else 8
        rng = np.random.default_rng(0)
        x_np = rng.standard_normal((b, 3, img, img)).astype(np.float32)
        y_np = rng.integers(0, 1000, (b,)).astype(np.int64)

        def o(amp=None):
            from oar.vision.models import resnet50
            net = resnet50()
            net.train()
            opt = oar.optimizer.Momentum(learning_rate=0.01, momentum=0.9, parameters=net.parameters())
            if amp == "O2":
                net, opt = oar.amp.decorate(net, opt, level="O2", dtype="bfloat16")
            x, y = oar.to_tensor(x_np), oar.to_tensor(y_np.reshape(-1, 1))

            def step():
                with oar.amp.auto_cast(enable=amp is not None, level=amp or "O1", dtype="bfloat16"):
                    logits = net(x)
                loss = oar.nn.functional.cross_entropy(logits.astype("float32"), y)
                loss.backward()
                opt.step()
                opt.clear_grad()
            return b / _time(step, self.osync, 2, 3, steps)

        def t(amp):
            torch = self.torch
            import torchvision
            net = torchvision.models.resnet50().cuda().train()
            opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
            x, y = torch.from_numpy(x_np).cuda(), torch.from_numpy(y_np).cuda()

            def step():
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
                    loss = torch.nn.functional.cross_entropy(net(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            return b / _time(step, self.tsync, 2, 3, steps)
        tf32 = "TF32 {} for both".format("on" if self.tf32 else "off")
        self._both("resnet50 train b{} {}px float32".format(b, img), "images/s", o,
                   (lambda: t(False)) if self.torch else None, tf32)
        self._free()
        # bfloat16 needs no loss scaling, so neither side uses a scaler.
        for level in ("O1", "O2"):
            self._both("resnet50 train b{} {}px AMP bf16 {}".format(b, img, level), "images/s",
                       lambda: o(level), (lambda: t(True)) if self.torch else None,
                       "oar auto_cast {} vs torch autocast bf16".format(level))
            self._free()

    def batchnorm(self):
        oar = self.oar
        shapes = [(4, 32, 28, 28), (4, 16, 56, 56)] if self.quick else [(64, 256, 56, 56), (64, 64, 112, 112)]
        inner = 2 if self.quick else 20
        rng = np.random.default_rng(0)
        for shape in shapes:
            c = shape[1]
            x_np = rng.standard_normal(shape).astype(np.float32)
            dy_np = rng.standard_normal(shape).astype(np.float32)
            for dtype in ("float32", "bfloat16"):
                moved = 8 * x_np.size * (4 if dtype == "float32" else 2)  # bytes of oar's 8 passes

                def o_op():
                    from oar import _C
                    bn, bn_grad = _C.Op("batch_norm"), _C.Op("batch_norm_grad")
                    x = oar.to_tensor(x_np).astype(dtype)
                    dy = oar.to_tensor(dy_np).astype(dtype)
                    w, b = oar.ones([c]), oar.zeros([c])
                    rm, rv = oar.zeros([c]), oar.ones([c])

                    def step():
                        r = bn(x, w, b, rm, rv, channel_axis=1, epsilon=1e-5, momentum=0.9, use_global_stats=0)
                        bn_grad(x, w, r[3], r[4], dy, channel_axis=1, use_global_stats=0)
                    return 1e3 * _time(step, self.osync, 3, 5, inner)

                def t_op():
                    torch = self.torch
                    x = torch.from_numpy(x_np).cuda().to(getattr(torch, dtype)).requires_grad_()
                    dy = torch.from_numpy(dy_np).cuda().to(getattr(torch, dtype))
                    w = torch.ones(c, device="cuda", requires_grad=True)
                    b = torch.zeros(c, device="cuda", requires_grad=True)
                    rm, rv = torch.zeros(c, device="cuda"), torch.ones(c, device="cuda")

                    def step():
                        y = torch.nn.functional.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
                        torch.autograd.grad(y, (x, w, b), dy)
                    return 1e3 * _time(step, self.tsync, 3, 5, inner)

                def o_layer():
                    layer = oar.nn.BatchNorm2D(c)
                    layer.train()
                    x = oar.to_tensor(x_np).astype(dtype)
                    x.stop_gradient = False
                    dy = oar.to_tensor(dy_np).astype(dtype)

                    def step():
                        layer(x).backward(dy)
                        layer.clear_gradients()
                        x.clear_gradient()
                    return 1e3 * _time(step, self.osync, 3, 5, inner)

                def t_layer():
                    torch = self.torch
                    layer = torch.nn.BatchNorm2d(c).cuda().train()
                    x = torch.from_numpy(x_np).cuda().to(getattr(torch, dtype)).requires_grad_()
                    dy = torch.from_numpy(dy_np).cuda().to(getattr(torch, dtype))

                    def step():
                        layer(x).backward(dy)
                        layer.zero_grad(set_to_none=True)
                        x.grad = None
                    return 1e3 * _time(step, self.tsync, 3, 5, inner)
                name = "{} {}".format("x".join(map(str, shape)), dtype)
                for kind, o, t in (("op", o_op, t_op), ("layer", o_layer, t_layer)):
                    before = len(self.results)
                    self._both("batchnorm {} fwd+bwd {}".format(kind, name), "ms", o,
                               t if self.torch else None, "lower is better")
                    r = self.results[before]
                    if kind == "op" and r["oar"]:
                        note = "oar {:.0f} GB/s".format(moved / (r["oar"] / 1e3) / 1e9)
                        r["note"] += "; " + note
                        print("    " + note)
                self._free()

    def cudagraph(self):
        oar = self.oar
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from bench_jit import build
        from oar.device.cuda.graphs import wrap_cuda_graph
        steps = 5 if self.quick else 50

        def run(kind, graphed, n):
            oar.seed(0)
            model, x, y = build(oar, kind)
            model = wrap_cuda_graph(model) if graphed else oar.jit.to_static(model)
            opt = oar.optimizer.Adam(1e-3, parameters=model.parameters())
            loss_fn = oar.nn.CrossEntropyLoss()
            losses, times = [], []
            for i in range(n):
                self.osync()
                t = time.perf_counter()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                opt.clear_grad()
                self.osync()
                times.append(time.perf_counter() - t)
                if i < 5:
                    losses.append(float(loss))
            return 1e3 * statistics.median(times[3:] or times), losses

        for kind in ("tiny_mlp", "transformer"):
            plain, lp = run(kind, False, steps)
            graph, lg = run(kind, True, steps)
            agree = np.allclose(lp, lg, rtol=1e-5, atol=1e-5)
            note = "speedup {:.2f}x; first losses {} within 1e-5".format(plain / graph, "agree" if agree else "DIFFER")
            self.add("cudagraph {} to_static step".format(kind), "ms/step", plain, note="without capture")
            self.add("cudagraph {} to_static+graph step".format(kind), "ms/step", graph, note=note,
                     oar_error=None if agree else "losses differ: {} vs {}".format(lp, lg))
            print("    {}: {:.3f} -> {:.3f} ms/step; {}".format(kind, plain, graph, note))
        self._free()

    def _free(self):
        import gc
        gc.collect()
        try:
            self.oar.device.empty_cache()
        except Exception:  # noqa: BLE001 -- only frees cached blocks
            pass
        if self.torch is not None:
            self.torch.cuda.empty_cache()


CASES = ("overhead", "matmul", "conv", "resnet50", "batchnorm", "cudagraph")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="gpu:0")
    ap.add_argument("--only", default=",".join(CASES), help="comma-separated: " + ",".join(CASES))
    ap.add_argument("--quick", action="store_true", help="small sizes (CPU / sim dry runs)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    bench = Bench(args.device, args.quick)
    info = {"device": args.device, "quick": args.quick, "torch": bench.torch.__version__ if bench.torch else None,
            "torch_reason": bench.torch_reason, "tf32": bench.tf32}
    if bench.torch is not None:
        info["gpu"] = bench.torch.cuda.get_device_name(0)
    print("oar {} vs torch ({})".format(args.device, info["torch"] or bench.torch_reason))
    print("{:<42} {:<10} {:>12} {:>12} {:>9} {}".format("case", "metric", "oar", "torch", "oar/torch", "note"))
    failed = False
    for case in args.only.split(","):
        try:
            getattr(bench, case)()
        except Exception as e:  # noqa: BLE001 -- one case's failure must not hide the others
            traceback.print_exc()
            bench.add(case, "-", note="the case itself failed", oar_error="{}: {}".format(type(e).__name__, e))
        if args.json:  # after every case, so a time-out keeps what was measured
            with open(args.json, "w") as f:
                json.dump({"info": info, "results": bench.results}, f, indent=1)
    failed = any("oar_error" in r for r in bench.results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
