"""oar.utils.run_check() (Paddle's paddle.utils.run_check): says which plugins this process found and
checks that each available device trains: one SGD step of a small linear model, compared with the same
step computed in numpy."""
import numpy as np

from .. import _C

__all__ = ["run_check"]


def _plugin_lines():
    lines = []
    for r in _C.plugin_records():
        if r.loaded:
            lines.append("  {} {} (device type '{}'): {} device(s), {}".format(
                r.name, r.version, r.device_type, r.num_devices, r.path))
        else:
            lines.append("  skipped {}: {}".format(r.path, r.reason))
    return lines or ["  (no plugin found)"]


def _places():
    """Every device of every available device type: 'cpu', 'gpu:0', 'sim:1', ..."""
    out = []
    for _, name, available, count in _C.device_types():
        if available:
            out += ["cpu"] if name == "cpu" else ["{}:{}".format(name, i) for i in range(count)]
    return out


def _train_step(place):
    """One SGD step of y = x @ w + b with a mean squared error on `place`; raises when the new weights
    differ from numpy's."""
    from .. import nn, optimizer, to_tensor
    from ..device import get_device, set_device
    from ..framework import unique_name
    from ..static import program as _prog
    rng = np.random.RandomState(0)
    x = rng.rand(8, 4).astype(np.float32)
    y = rng.rand(8, 1).astype(np.float32)
    previous = get_device()
    # Eager also in static mode (nothing is added to the user's programs); the user's layer names are
    # left as they are.
    static, builder = _prog._state["static"], _C._set_builder(None)
    _prog._state["static"] = False
    set_device(place)
    try:
        with unique_name.guard():
            model = nn.Linear(4, 1)
            w0, b0 = model.weight.numpy().astype(np.float64), model.bias.numpy().astype(np.float64)
            opt = optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
            loss = ((model(to_tensor(x)) - to_tensor(y)) ** 2).mean()
            loss.backward()
            opt.step()
            w1, b1 = model.weight.numpy(), model.bias.numpy()
    finally:
        set_device(previous)
        _prog._state["static"] = static
        _C._set_builder(builder)
    r = x.astype(np.float64) @ w0 + b0 - y  # residuals
    want_w = w0 - 0.1 * 2.0 * x.T @ r / len(x)
    want_b = b0 - 0.1 * 2.0 * r.mean(axis=0)
    if not (np.allclose(w1, want_w, rtol=1e-4, atol=1e-5) and np.allclose(b1, want_b, rtol=1e-4, atol=1e-5)):
        raise RuntimeError("a training step on {} gave weights {} and bias {}, expected {} and {}".format(
            place, w1.ravel().tolist(), b1.tolist(), want_w.ravel().tolist(), want_b.tolist()))


def run_check():
    """Prints the plugins found, runs a training step on every available device and says where oar
    works; raises RuntimeError naming the devices where it does not."""
    print("Running verify oar program ...")
    print("plugins found:")
    print("\n".join(_plugin_lines()))
    working, failed = {}, []
    for place in _places():
        try:
            _train_step(place)
            kind = place.split(":")[0]
            working[kind] = working.get(kind, 0) + 1
        except Exception as e:  # noqa: BLE001 -- reported, then raised together below
            failed.append("{}: {}: {}".format(place, type(e).__name__, e))
    for kind, n in working.items():
        print("oar works well on {} {}{}.".format(n, kind.upper() if kind in ("cpu", "gpu") else kind,
                                                  "s" if n > 1 else ""))
    if failed:
        raise RuntimeError("oar does not work on:\n  " + "\n  ".join(failed))
    print("oar is installed successfully! Let's start deep learning with oar now.")
