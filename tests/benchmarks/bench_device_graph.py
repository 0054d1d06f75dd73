"""to_static forward + backward with and without graph capture (wrap_cuda_graph, docs/device_graph.md) on
any capture-capable device: a chain of 16 small matmul layers at batch 8, the launch-bound case graphs are
for. Only ops the sim has kernels for, so it runs on sim:0 (where a launch is one worker-queue round trip per
kernel, or one per graph) as well as on a GPU. Median ms per step; the losses of the first steps must agree.

    python tests/benchmarks/bench_device_graph.py [--device sim:0] [--steps 200]
Not a test: nothing here asserts speed.
"""
import argparse
import statistics
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="sim:0")
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    import oar
    from oar.device.cuda import graphs

    class Net(oar.nn.Layer):
        def __init__(self, depth=16):
            super().__init__()
            self.ws = []
            for i in range(depth):
                w = self.create_parameter([16, 16])
                w.set_value(np.random.default_rng(i).standard_normal((16, 16)).astype(np.float32) * 0.1)
                self.add_parameter("w%d" % i, w)
                self.ws.append(w)

        def forward(self, x):
            for w in self.ws:
                x = oar.matmul(x, w) * x
            return (x * x).sum()

    def run(graphed):
        oar.set_device(args.device)
        net = Net()
        net = graphs.wrap_cuda_graph(net) if graphed else oar.jit.to_static(net)
        x = oar.to_tensor(np.random.default_rng(99).standard_normal((8, 16)).astype(np.float32) * 0.5)
        times, losses = [], []
        for i in range(args.steps):
            oar.device.synchronize(args.device)
            t = time.perf_counter()
            loss = net(x)
            loss.backward()
            oar.device.synchronize(args.device)
            times.append(time.perf_counter() - t)
            for p in net.parameters():
                p.clear_grad()
            if i < 3:
                losses.append(float(loss))
        return statistics.median(times[10:]) * 1e3, losses

    plain, lp = run(False)
    graphed, lg = run(True)
    print("{}: 16 matmul layers, batch 8, forward + backward: to_static {:.3f} ms, with graph capture {:.3f} ms "
          "({:.2f}x); first losses agree within 1e-5: {}".format(args.device, plain, graphed, plain / graphed,
                                                                 np.allclose(lp, lg, rtol=1e-5, atol=1e-5)))


if __name__ == "__main__":
    main()
