"""The main job: trains LeNet on the real Fashion-MNIST with the Paddle-style high-level API.

    python samples/train_lenet.py [--epochs 8] [--batch-size 64] [--lr 0.002] [--device cpu] [--amp O2]
                                  [--train-subset N] [--save-dir output/lenet] [--profile DIR]

Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist). The script is written the way a
PaddlePaddle 2.x user writes it (`import oar as paddle` works the same), shows a live progress bar
(step, loss, accuracy, time per step, ETA), evaluates on the 10,000 test images after every epoch, saves
the model and prints the final test accuracy. With --profile DIR, oar.profiler records training steps 10 to
19, prints its operator and kernel tables and writes a chrome trace (open it in Perfetto) into DIR.
"""
import argparse
import os
import sys
import time

import oar as paddle
import oar.vision.transforms as T
from oar.vision.datasets import FashionMNIST
from oar.vision.models import LeNet

# Fashion-MNIST's pixel mean and standard deviation (of the [0, 1]-scaled training images).
MEAN, STD = 0.2860, 0.3530
TARGET = 0.88


class ProfileSteps(paddle.callbacks.Callback):
    """Steps an oar.profiler.Profiler after every training batch (Paddle's profiler is stepped by hand)."""

    def __init__(self, out_dir, first=10, last=20):
        super().__init__()
        self.prof = paddle.profiler.Profiler(scheduler=(first, last),
                                             on_trace_ready=paddle.profiler.export_chrome_tracing(out_dir, "lenet"))

    def on_train_begin(self, logs=None):
        self.prof.start()

    def on_train_batch_end(self, step, logs=None):
        self.prof.step()

    def on_train_end(self, logs=None):
        self.prof.stop()
        if self.prof.profiler_result is not None:
            V = paddle.profiler.SummaryView
            self.prof.summary(time_unit="ms", views=[V.OverView, V.OperatorView, V.KernelView])


class Subset(paddle.io.Dataset):
    """The first n samples of a dataset (a short run for tests)."""

    def __init__(self, dataset, n):
        self.dataset, self.n = dataset, min(n, len(dataset))

    def __getitem__(self, i):
        return self.dataset[i]

    def __len__(self):
        return self.n


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3, help="Adam's initial learning rate (cosine decay to 0)")
    p.add_argument("--device", default="cpu", help="cpu, sim:0, ...")
    p.add_argument("--train-subset", type=int, default=None, help="train on the first N images only")
    p.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--save-dir", default="output/lenet", help="where Model.save writes final.pdparams/.pdopt")
    p.add_argument("--log-freq", type=int, default=None, help="progress-bar update interval in steps")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--amp", default="O0", choices=["O0", "O1", "O2"],
                   help="mixed precision level (bfloat16 on cpu; docs/amp.md)")
    p.add_argument("--verbose", type=int, default=None, help="1: one live line (default on a terminal), 2: lines")
    p.add_argument("--profile", default=None, metavar="DIR",
                   help="profile training steps 10-19 with oar.profiler; the chrome trace goes into DIR")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    paddle.set_device(args.device)
    paddle.seed(args.seed)

    # backend="cv2": samples are numpy arrays (no PIL needed); ToTensor scales uint8 to [0, 1] as CHW.
    transform = T.Compose([T.ToTensor(), T.Normalize(mean=[MEAN], std=[STD])])
    train_dataset = FashionMNIST(mode="train", transform=transform, backend="cv2")
    test_dataset = FashionMNIST(mode="test", transform=transform, backend="cv2")
    if args.train_subset:
        train_dataset = Subset(train_dataset, args.train_subset)
    print("Fashion-MNIST: {} training images, {} test images (from {})".format(
        len(train_dataset), len(test_dataset), os.path.dirname(test_dataset.image_path)))

    net = LeNet(num_classes=10)
    model = paddle.Model(net)
    paddle.summary(net, (1, 1, 28, 28))
    # Cosine decay over all training steps; the Model's LRScheduler callback steps it after every batch.
    steps_per_epoch = (len(train_dataset) + args.batch_size - 1) // args.batch_size
    scheduler = paddle.optimizer.lr.CosineAnnealingDecay(learning_rate=args.lr, T_max=args.epochs * steps_per_epoch)
    optimizer = paddle.optimizer.Adam(learning_rate=scheduler, parameters=model.parameters())
    amp = None if args.amp == "O0" else {"level": args.amp, "dtype": "bfloat16"}
    model.prepare(optimizer, paddle.nn.CrossEntropyLoss(), paddle.metric.Accuracy(), amp_configs=amp)

    tty = sys.stdout.isatty()
    verbose = args.verbose if args.verbose is not None else (1 if tty else 2)
    log_freq = args.log_freq or (10 if verbose == 1 else 100)
    callbacks = [ProfileSteps(args.profile)] if args.profile else None
    start = time.time()
    model.fit(train_dataset, test_dataset, batch_size=args.batch_size, epochs=args.epochs, verbose=verbose,
              log_freq=log_freq, num_workers=args.num_workers, shuffle=True, callbacks=callbacks)
    train_time = time.time() - start

    result = model.evaluate(test_dataset, batch_size=256, verbose=0, num_workers=args.num_workers)
    acc = float(result["acc"])
    os.makedirs(args.save_dir, exist_ok=True)
    prefix = os.path.join(args.save_dir, "final")
    model.save(prefix)  # final.pdparams (the network) + final.pdopt (Adam's moments)
    print("saved {}.pdparams and {}.pdopt".format(prefix, prefix))
    print("training with per-epoch evaluation took {:.1f} s ({} epochs, {:.0f} training images/s)".format(
        train_time, args.epochs, args.epochs * len(train_dataset) / max(train_time, 1e-9)))
    print("final test accuracy: {:.4f} ({} the {:.2f} target)".format(
        acc, "meets" if acc >= TARGET else "below", TARGET))
    return acc


if __name__ == "__main__":
    main()
