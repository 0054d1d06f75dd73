"""Where a GPU training step spends its time, oar beside PyTorch on the same card (issue 20, item 6).

    python tests/benchmarks/profile_gpu.py [--device gpu:0] [--models resnet50,transformer] [--steps 6]
        [--top 15] [--quick] [--no-amp] [--profile fp32,O1]

For each model, one training step (forward, cross-entropy, backward, optimizer step):
  - ms/step of oar and of torch (same architecture, same batch, float32, TF32 as oar's policy), and of oar's
    AMP (O1 bfloat16, and O2 bfloat16 with master weights) beside torch's autocast bfloat16;
  - oar's profile of `steps` steps (float32, or the AMP levels named by --profile): the wall time, the time the device was busy (the sum of the kernel
    events the plugin timed), and the kernels and operators that took longest;
  - torch's profile of the same steps: its kernels by device time.
A step whose wall time is far above its device time is bound by the host (launches, allocation,
synchronization); one close to it is bound by its kernels, and the tables say which. Not a test.
"""
import argparse
import gc
import os
import sys
import time

import numpy as np


def _median_ms(step, sync, warmup, steps):
    for _ in range(warmup):
        step()
    sync()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t)
    return 1000.0 * float(np.median(times))


def _data(name, quick):
    rng = np.random.default_rng(0)
    if name == "resnet50":
        b, img = (2, 64) if quick else (64, 224)
        return rng.standard_normal((b, 3, img, img)).astype(np.float32), rng.integers(0, 1000, (b,)), 1000
    b, seq, vocab = (4, 16, 100) if quick else (64, 128, 1000)
    tokens = rng.integers(0, vocab, (b, seq))
    return tokens, np.roll(tokens, -1, axis=1).reshape(-1), vocab


D_MODEL, NHEAD, FF, LAYERS = 256, 4, 1024, 2


def oar_step(name, device, x_np, y_np, classes, amp=None):
    """A closure running one oar training step; amp is None, 'O1' or 'O2' (bfloat16)."""
    import oar
    import oar.nn.functional as F
    oar.set_device(device)
    oar.seed(0)
    if name == "resnet50":
        from oar.vision.models import resnet50
        net = resnet50()
    else:
        class Net(oar.nn.Layer):
            def __init__(self):
                super().__init__()
                self.embed = oar.nn.Embedding(classes, D_MODEL)
                self.encoder = oar.nn.TransformerEncoder(
                    oar.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.1), LAYERS)
                self.head = oar.nn.Linear(D_MODEL, classes)

            def forward(self, t):
                return self.head(self.encoder(self.embed(t)))
        net = Net()
    net.train()
    opt = oar.optimizer.Momentum(learning_rate=0.01, momentum=0.9, parameters=net.parameters())
    scaler = None
    if amp is not None:
        if amp == "O2":
            net, opt = oar.amp.decorate(net, opt, level="O2", dtype="bfloat16")
        scaler = oar.amp.GradScaler(init_loss_scaling=1024.0)
    x, y = oar.to_tensor(x_np), oar.to_tensor(y_np.reshape(-1, 1))

    def step():
        if amp is None:
            loss = F.cross_entropy(net(x).reshape([-1, classes]), y)
            loss.backward()
            opt.step()
        else:
            with oar.amp.auto_cast(level=amp, dtype="bfloat16"):
                logits = net(x).reshape([-1, classes])
            loss = F.cross_entropy(logits.astype("float32"), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        opt.clear_grad()
    return step


def torch_step(torch, name, x_np, y_np, classes, amp=False):
    torch.manual_seed(0)
    if name == "resnet50":
        import torchvision
        net = torchvision.models.resnet50()
    else:
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(classes, D_MODEL)
                layer = torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.1, batch_first=True)
                self.encoder = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
                self.head = torch.nn.Linear(D_MODEL, classes)

            def forward(self, t):
                return self.head(self.encoder(self.embed(t)))
        net = Net()
    net = net.cuda().train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.from_numpy(x_np).cuda(), torch.from_numpy(y_np).cuda()

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            logits = net(x).reshape(-1, classes)
        loss = torch.nn.functional.cross_entropy(logits.float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def oar_profile(step, device, steps):
    import oar
    from oar import profiler as P
    step()
    oar.device.synchronize(device)
    prof = P.Profiler(targets=[P.ProfilerTarget.CPU, P.ProfilerTarget.CUSTOM_DEVICE])
    prof.start()
    for _ in range(steps):
        step()
        prof.step()
    oar.device.synchronize(device)
    prof.stop()
    # The tables without summary()'s own print: the caller trims them.
    from oar.profiler.profiler import _summary
    return _summary(prof.profiler_result, P.SortedKeys.GPUTotal, "ms",
                    [P.SummaryView.OverView, P.SummaryView.KernelView, P.SummaryView.OperatorView])


def torch_profile(torch, step, steps, top):
    from torch.profiler import ProfilerActivity, profile
    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    ka = prof.key_averages()
    for key in ("self_device_time_total", "self_cuda_time_total"):
        try:
            return ka.table(sort_by=key, row_limit=top, max_name_column_width=60)
        except Exception:  # noqa: BLE001 -- the key's name changed across torch versions
            continue
    return ka.table(row_limit=top)


def _trim(text, top):
    """The overview and the first `top` rows of each table."""
    out, rows = [], None
    for line in text.splitlines():
        if "Summary" in line:
            rows = None
        elif line.startswith("Name"):
            rows = 0
        elif rows is not None and not line.startswith("-"):
            rows += 1
            if rows > top:
                continue
        out.append(line)
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="gpu:0")
    ap.add_argument("--models", default="resnet50,transformer")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-amp", action="store_true", help="time float32 only")
    ap.add_argument("--profile", default="fp32", help="comma-separated: fp32, O1, O2 (the AMP levels, bfloat16)")
    args = ap.parse_args(argv)
    import oar
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device for torch")
        exact = os.environ.get("OAR_ALLOW_TF32", "0") != "1"
        torch.backends.cuda.matmul.allow_tf32 = not exact
        torch.backends.cudnn.allow_tf32 = not exact
    except Exception as e:  # noqa: BLE001
        print("torch not used:", e)
        torch = None
    osync = lambda: oar.device.synchronize(args.device)  # noqa: E731
    warm, steps = (1, 2) if args.quick else (3, args.steps)
    for name in args.models.split(","):
        x_np, y_np, classes = _data(name, args.quick)
        print(f"==== {name}, input {list(x_np.shape)}", flush=True)
        rows = []
        modes = [None] if args.no_amp else [None, "O1", "O2"]
        for amp in modes:
            try:
                ms = _median_ms(oar_step(name, args.device, x_np, y_np, classes, amp), osync, warm, steps)
            except Exception as e:  # noqa: BLE001
                ms = f"failed: {type(e).__name__}: {str(e)[:200]}"
            rows.append((f"oar {amp or 'fp32'}", ms))
            gc.collect()
            oar.device.empty_cache()
            print(f"  {rows[-1][0]:<22} {ms if isinstance(ms, str) else f'{ms:9.2f} ms/step'}", flush=True)
        if torch is not None:
            for amp in ([False] if args.no_amp else [False, True]):
                step = torch_step(torch, name, x_np, y_np, classes, amp)
                ms = _median_ms(step, torch.cuda.synchronize, warm, steps)
                print(f"  torch {'autocast bf16' if amp else 'fp32':<16} {ms:9.2f} ms/step", flush=True)
                del step
                torch.cuda.empty_cache()
        for amp in args.profile.split(","):
            level = None if amp == "fp32" else amp
            print(f"---- oar profile, {amp}, {steps} steps", flush=True)
            try:
                step = oar_step(name, args.device, x_np, y_np, classes, level)
                print(_trim(oar_profile(step, args.device, steps), args.top), flush=True)
            except Exception as e:  # noqa: BLE001
                print("oar profile failed:", type(e).__name__, e)
            step = None
            gc.collect()
            oar.device.empty_cache()
            if torch is not None:
                print(f"---- torch profile, {'autocast bf16' if level else 'fp32'}, {steps} steps", flush=True)
                step = torch_step(torch, name, x_np, y_np, classes, level is not None)
                print(torch_profile(torch, step, steps, args.top), flush=True)
                step = None
                torch.cuda.empty_cache()
        oar.device.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
