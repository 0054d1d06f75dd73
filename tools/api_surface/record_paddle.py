"""Record PaddlePaddle's public API names, module by module, as the yardstick for docs/api_surface.md.

Run with a real Paddle installed (e.g. paddlepaddle==2.6.2 in a venv):
    python tools/api_surface/record_paddle.py > tools/api_surface/paddle_2_6_2.json
A module's public names are its __all__ (what Paddle documents), or its public dir() where it has none.
"""
import importlib
import json
import sys

import paddle

MODULES = [
    "", "nn", "nn.functional", "nn.initializer", "nn.utils", "linalg", "fft", "signal", "audio",
    "audio.features", "audio.functional", "distribution", "sparse", "sparse.nn", "sparse.nn.functional",
    "vision.ops", "vision.transforms", "vision.models", "vision.datasets", "text", "incubate", "profiler",
    "static", "static.nn", "jit", "io", "optimizer", "optimizer.lr", "metric", "amp", "amp.debugging",
    "distributed", "distributed.fleet", "device", "device.cuda", "utils", "utils.unique_name", "regularizer",
    "autograd", "geometric", "callbacks", "hub", "onnx", "quantization", "inference", "sysconfig", "version",
]


def public_names(mod):
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in dir(mod) if not n.startswith("_")]
    return sorted(set(names))


def main():
    out = {"paddle_version": paddle.__version__, "modules": {}}
    for sub in MODULES:
        full = "paddle" + ("." + sub if sub else "")
        try:
            mod = importlib.import_module(full)
        except Exception as e:  # a module the wheel lacks is recorded as such
            print(f"skip {full}: {e}", file=sys.stderr)
            continue
        out["modules"][sub] = public_names(mod)
    out["modules"]["Tensor"] = sorted(n for n in dir(paddle.Tensor) if not n.startswith("_"))
    json.dump(out, sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
