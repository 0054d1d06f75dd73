"""Builds this folder's custom ops on first use with oar.utils.cpp_extension.load and checks them against
numpy on every device oar found (cpu, and sim:0 when the sim plugin is installed).

    python use_load.py

The library is cached in ~/.cache/oar_extensions/custom_jit_ops ($OAR_EXTENSION_DIR to move it): a second
run loads it without compiling; editing relu_op.cc or custom_linear.cc rebuilds it. Other scripts can
reuse the ops with `from use_load import ops`.
"""
import os

import numpy as np

import oar
from oar.utils.cpp_extension import load

HERE = os.path.dirname(os.path.abspath(__file__))

ops = load(
    name="custom_jit_ops",
    sources=[os.path.join(HERE, "relu_op.cc"), os.path.join(HERE, "custom_linear.cc")],
    extra_cxx_cflags=["-Wall"],
    verbose=True,
)


def relu_reference(x, dout):
    return np.maximum(x, 0), dout * (x > 0)


def linear_reference(x, w, b, dout, alpha, activation):
    pre = alpha * (x @ w) + b
    out = np.maximum(pre, 0) if activation == "relu" else pre
    dpre = dout * (pre > 0) if activation == "relu" else dout
    return out, alpha * dpre @ w.T, alpha * x.T @ dpre, dpre.sum(0)


def check(place):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((4, 8)).astype("float32")
    dout_np = rng.standard_normal((4, 8)).astype("float32")

    x = oar.to_tensor(x_np, place=place, stop_gradient=False)
    y = ops.custom_relu(x)
    y.backward(oar.to_tensor(dout_np, place=place))
    want_y, want_dx = relu_reference(x_np, dout_np)
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), want_dx, rtol=1e-6)
    print("custom_relu on {}: forward and backward match numpy".format(place))

    w_np = rng.standard_normal((8, 3)).astype("float32")
    b_np = rng.standard_normal((3,)).astype("float32")
    dout_np = rng.standard_normal((4, 3)).astype("float32")
    for activation in ("identity", "relu"):
        x = oar.to_tensor(x_np, place=place, stop_gradient=False)
        w = oar.to_tensor(w_np, place=place, stop_gradient=False)
        b = oar.to_tensor(b_np, place=place, stop_gradient=False)
        out = ops.custom_linear(x, w, b, 0.5, activation)
        out.backward(oar.to_tensor(dout_np, place=place))
        want = linear_reference(x_np, w_np, b_np, dout_np, 0.5, activation)
        for got, ref in zip((out, x.grad, w.grad, b.grad), want):
            np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-5)
    print("custom_linear on {}: forward and backward match numpy".format(place))


if __name__ == "__main__":
    places = []
    for d in oar.device.get_available_device():
        if d.split(":")[0] not in [p.split(":")[0] for p in places]:
            places.append(d)
    for place in places:
        check(place)
