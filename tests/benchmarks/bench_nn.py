"""layer_norm, batch_norm and cross_entropy forward+backward, and the transcendental elementwise and
softmax kernels (exp, tanh, sigmoid, erf, gelu, silu, softmax, log_softmax; float32 and bfloat16, forward
and forward+backward), softmax on short rows: oar vs numpy and torch (CPU, OMP_NUM_THREADS threads, two by default).

Run by hand: PYTHONPATH=<oar install> python3 tests/benchmarks/bench_nn.py [--only activations|short_softmax|batch_norm]
Not a test and not part of CI. torch is skipped when it cannot be imported.
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "2")

import timeit  # noqa: E402

import numpy as np  # noqa: E402

import oar  # noqa: E402
import oar.nn.functional as F  # noqa: E402

try:
    import torch
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
except ImportError:  # pragma: no cover
    torch = None


def best_ms(fn, number=5, repeat=5):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def bench_layer_norm(rows, hidden):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, hidden)).astype("float32")
    w = rng.standard_normal(hidden).astype("float32")
    b = rng.standard_normal(hidden).astype("float32")
    g = rng.standard_normal((rows, hidden)).astype("float32")
    ox = oar.to_tensor(x, stop_gradient=False)
    ow = oar.to_tensor(w, stop_gradient=False)
    ob = oar.to_tensor(b, stop_gradient=False)
    og = oar.to_tensor(g)

    def o_fwd():
        with oar.no_grad():
            return F.layer_norm(ox, hidden, ow, ob)

    def o_fb():
        y = F.layer_norm(ox, hidden, ow, ob)
        return oar.grad([y], [ox, ow, ob], [og])

    # An elementwise op of the same size: what one pass with a fresh output costs in oar here.
    res = {"oar relu baseline": best_ms(lambda: F.relu(og)), "oar fwd": best_ms(o_fwd), "oar fwd+bwd": best_ms(o_fb)}
    if torch is not None:
        tx = torch.tensor(x, requires_grad=True)
        tw = torch.tensor(w, requires_grad=True)
        tb = torch.tensor(b, requires_grad=True)
        tg = torch.tensor(g)

        def t_fwd():
            with torch.no_grad():
                return torch.nn.functional.layer_norm(tx, (hidden,), tw, tb)

        def t_fb():
            y = torch.nn.functional.layer_norm(tx, (hidden,), tw, tb)
            return torch.autograd.grad([y], [tx, tw, tb], [tg])

        res["torch fwd"] = best_ms(t_fwd)
        res["torch fwd+bwd"] = best_ms(t_fb)
        # same numbers
        ogr = o_fb()
        tgr = t_fb()
        np.testing.assert_allclose(ogr[0].numpy(), tgr[0].numpy(), rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(ogr[1].numpy(), tgr[1].numpy(), rtol=1e-3, atol=1e-2)
    return res


def bench_cross_entropy(n, classes):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, classes)).astype("float32")
    y = rng.integers(0, classes, n).astype("int64")
    ox = oar.to_tensor(x, stop_gradient=False)
    oy = oar.to_tensor(y)

    def o_fwd():
        with oar.no_grad():
            return F.cross_entropy(ox, oy)

    def o_fb():
        return oar.grad([F.cross_entropy(ox, oy)], [ox])

    res = {"oar fwd": best_ms(o_fwd), "oar fwd+bwd": best_ms(o_fb)}
    if torch is not None:
        tx = torch.tensor(x, requires_grad=True)
        ty = torch.tensor(y)

        def t_fwd():
            with torch.no_grad():
                return torch.nn.functional.cross_entropy(tx, ty)

        def t_fb():
            return torch.autograd.grad([torch.nn.functional.cross_entropy(tx, ty)], [tx])

        res["torch fwd"] = best_ms(t_fwd)
        res["torch fwd+bwd"] = best_ms(t_fb)
        np.testing.assert_allclose(float(o_fwd()), float(t_fwd()), rtol=1e-4)
        np.testing.assert_allclose(o_fb()[0].numpy(), t_fb()[0].numpy(), rtol=1e-3, atol=1e-7)
    return res


# op: (oar, torch, numpy or None, input kind); "vec": 4M elements, "rows": [4096, 1024] along the last axis.
ACTIVATIONS = {
    "exp": (lambda t: oar.exp(t), lambda t: torch.exp(t), np.exp, "vec"),
    "tanh": (lambda t: oar.tanh(t), lambda t: torch.tanh(t), np.tanh, "vec"),
    "sigmoid": (lambda t: F.sigmoid(t), lambda t: torch.sigmoid(t), None, "vec"),
    "erf": (lambda t: oar.erf(t), lambda t: torch.erf(t), None, "vec"),
    "gelu": (lambda t: F.gelu(t), lambda t: torch.nn.functional.gelu(t), None, "vec"),
    "gelu tanh": (lambda t: F.gelu(t, approximate=True), lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
                  None, "vec"),
    "silu": (lambda t: F.silu(t), lambda t: torch.nn.functional.silu(t), None, "vec"),
    "softmax": (lambda t: F.softmax(t, axis=-1), lambda t: torch.softmax(t, -1), None, "rows"),
    "log_softmax": (lambda t: F.log_softmax(t, axis=-1), lambda t: torch.log_softmax(t, -1), None, "rows"),
}


def bench_activations():
    """{(op, dtype): {column: ms}}; fwd+bwd is the op and its gradient for a given output gradient."""
    rng = np.random.default_rng(0)
    data = {"vec": rng.standard_normal(1 << 22).astype("float32"),
            "rows": rng.standard_normal((4096, 1024)).astype("float32")}
    out = {}
    for name, (fo, ft, fn, kind) in ACTIVATIONS.items():
        a = data[kind]
        for dt in ("float32", "bfloat16"):
            r = {}
            x = oar.to_tensor(a).astype(dt)
            with oar.no_grad():
                r["oar fwd"] = best_ms(lambda: fo(x))
            xg = oar.to_tensor(a).astype(dt)
            xg.stop_gradient = False
            g = oar.ones_like(xg)
            r["oar fwd+bwd"] = best_ms(lambda: oar.grad([fo(xg)], [xg], [g]))
            if fn is not None and dt == "float32":
                r["numpy fwd"] = best_ms(lambda: fn(a))
            if torch is not None:
                tdt = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dt]
                tx = torch.from_numpy(a).to(tdt)
                with torch.no_grad():
                    r["torch fwd"] = best_ms(lambda: ft(tx))
                txg = tx.clone().requires_grad_()
                tg = torch.ones_like(txg)
                r["torch fwd+bwd"] = best_ms(lambda: torch.autograd.grad([ft(txg)], [txg], [tg]))
            out[(name, dt)] = r
    return out


def bench_short_rows(shape):
    """softmax and log_softmax along a short last axis (attention over 16 keys: [8, 4, 16, 16]), in us:
    per-call overheads and the per-row loop dominate here, not the per-element work."""
    a = np.random.default_rng(0).standard_normal(shape).astype("float32")
    res = {}
    for name, fo, ft in (("softmax", lambda t: F.softmax(t, axis=-1), lambda t: torch.softmax(t, -1)),
                         ("log_softmax", lambda t: F.log_softmax(t, axis=-1), lambda t: torch.log_softmax(t, -1))):
        x = oar.to_tensor(a)
        with oar.no_grad():
            res["oar " + name + " fwd"] = best_ms(lambda: fo(x), number=200) * 1e3
        xg = oar.to_tensor(a, stop_gradient=False)
        g = oar.ones_like(xg)
        res["oar " + name + " fwd+bwd"] = best_ms(lambda: oar.grad([fo(xg)], [xg], [g]), number=200) * 1e3
        if torch is not None:
            tx = torch.from_numpy(a)
            with torch.no_grad():
                res["torch " + name + " fwd"] = best_ms(lambda: ft(tx), number=200) * 1e3
            txg = tx.clone().requires_grad_()
            tg = torch.ones_like(txg)
            res["torch " + name + " fwd+bwd"] = best_ms(lambda: torch.autograd.grad([ft(txg)], [txg], [tg]),
                                                       number=200) * 1e3
    return res


def bench_batch_norm(shape, data_format):
    """Training batch_norm (batch statistics, running statistics updated), forward and forward+backward."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype("float32")
    g = rng.standard_normal(shape).astype("float32")
    c = shape[1] if data_format == "NCHW" else shape[-1]
    ox = oar.to_tensor(x, stop_gradient=False)
    ow = oar.to_tensor(np.ones(c, "float32"), stop_gradient=False)
    ob = oar.to_tensor(np.zeros(c, "float32"), stop_gradient=False)
    rm, rv = oar.zeros([c]), oar.ones([c])
    og = oar.to_tensor(g)

    def o_fwd():
        with oar.no_grad():
            return F.batch_norm(ox, rm, rv, ow, ob, training=True, data_format=data_format)

    def o_fb():
        y = F.batch_norm(ox, rm, rv, ow, ob, training=True, data_format=data_format)
        return oar.grad([y], [ox, ow, ob], [og])

    res = {"oar fwd": best_ms(o_fwd), "oar fwd+bwd": best_ms(o_fb)}
    if torch is not None:
        tx = torch.tensor(x, requires_grad=True)
        if data_format == "NHWC":  # torch's channels-last memory format, logical NCHW
            tx = torch.tensor(x.transpose(0, 3, 1, 2)).contiguous(memory_format=torch.channels_last)
            tx.requires_grad_(True)
        tw = torch.ones(c, requires_grad=True)
        tb = torch.zeros(c, requires_grad=True)
        trm, trv = torch.zeros(c), torch.ones(c)
        tg = torch.tensor(g) if data_format == "NCHW" else torch.tensor(g.transpose(0, 3, 1, 2))

        def t_fwd():
            with torch.no_grad():
                return torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, training=True)

        def t_fb():
            y = torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, training=True)
            return torch.autograd.grad([y], [tx, tw, tb], [tg])

        res["torch fwd"] = best_ms(t_fwd)
        res["torch fwd+bwd"] = best_ms(t_fb)
        ogr, tgr = o_fb(), t_fb()
        tdx = tgr[0].numpy() if data_format == "NCHW" else tgr[0].permute(0, 2, 3, 1).numpy()
        np.testing.assert_allclose(ogr[0].numpy(), tdx, rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(ogr[1].numpy(), tgr[1].numpy(), rtol=1e-3, atol=1e-1)
    return res


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["activations", "short_softmax", "batch_norm"], default=None)
    args = ap.parse_args()
    print("threads: {} (OMP_NUM_THREADS)".format(os.environ["OMP_NUM_THREADS"]))
    if args.only in (None, "short_softmax"):
        for shape in [(8, 4, 16, 16), (8, 4, 16, 7)]:
            r = bench_short_rows(shape)
            print("short rows {}: ".format(list(shape)) + ", ".join("{} {:.1f} us".format(k, v) for k, v in r.items()),
                  flush=True)
    if args.only in (None, "batch_norm"):
        for shape, fmt in [((32, 64, 56, 56), "NCHW"), ((32, 256, 14, 14), "NCHW"), ((32, 512, 7, 7), "NCHW"),
                           ((32, 56, 56, 64), "NHWC"), ((256, 3, 64, 64), "NCHW")]:
            r = bench_batch_norm(shape, fmt)
            print("batch_norm {} {}: ".format(list(shape), fmt) + ", ".join("{} {:.2f} ms".format(k, v)
                                                                             for k, v in r.items()), flush=True)
    if args.only in ("short_softmax", "batch_norm"):
        return
    cols = ["oar fwd", "numpy fwd", "torch fwd", "oar fwd+bwd", "torch fwd+bwd"]
    print("{:<24}".format("op (4M / [4096, 1024]) ms") + "".join("{:>15}".format(c) for c in cols))
    for (name, dt), r in bench_activations().items():
        print("{:<24}".format(name + " " + dt) + "".join(
            "{:>15.2f}".format(r[c]) if c in r else "{:>15}".format("-") for c in cols), flush=True)
    if args.only:
        return
    for rows, hidden in [(4096, 768), (2048, 4096), (16384, 128)]:
        r = bench_layer_norm(rows, hidden)
        print("layer_norm [{}, {}]: ".format(rows, hidden) + ", ".join("{} {:.2f} ms".format(k, v) for k, v in r.items()))
    for n, c in [(4096, 1000), (512, 32000), (65536, 10)]:
        r = bench_cross_entropy(n, c)
        print("cross_entropy [{}, {}]: ".format(n, c) + ", ".join("{} {:.2f} ms".format(k, v) for k, v in r.items()))


if __name__ == "__main__":
    main()
