"""A text progress bar for Model.fit/evaluate/predict (Paddle's hapi ProgressBar).

On a terminal (verbose=1) it redraws one line in place with '\\r'; otherwise (verbose=2, or output
that is not a TTY) it writes one plain line per update, so logs stay readable in files and CI.
"""
import shutil
import sys
import time

import numpy as np

__all__ = ["ProgressBar"]


def _format_value(v):
    if isinstance(v, np.ndarray) and v.size == 1:
        v = v.item()
    if isinstance(v, (float, np.floating)):
        return "{:.4f}".format(v) if abs(v) > 1e-3 else "{:.4e}".format(v)
    return str(v)


def _format_eta(seconds):
    eta = int(seconds)
    if eta >= 3600:
        return "{}:{:02d}:{:02d}".format(eta // 3600, (eta % 3600) // 60, eta % 60)
    if eta >= 60:
        return "{}:{:02d}".format(eta // 60, eta % 60)
    return "{}s".format(eta)


def _format_rate(time_per_unit, name):
    if time_per_unit >= 1 or time_per_unit == 0:
        return "{:.0f}s/{}".format(time_per_unit, name) if time_per_unit >= 10 else \
            "{:.2f}s/{}".format(time_per_unit, name)
    if time_per_unit >= 1e-3:
        return "{:.0f}ms/{}".format(time_per_unit * 1e3, name)
    return "{:.0f}us/{}".format(time_per_unit * 1e6, name)


class ProgressBar:
    """Progress of `num` steps (None when unknown).

    update(current, values) shows "step current/num [====>...] - k: v ... - ETA: t - 12ms/step".
    verbose=1: a single line redrawn in place when the output is a terminal (plain lines otherwise);
    verbose=2 or 3: one plain line per update. `file` defaults to the current sys.stdout.
    """

    def __init__(self, num=None, width=30, verbose=1, start=True, file=None, name="step"):
        if num is not None and (not isinstance(num, int) or num <= 0):
            raise TypeError("ProgressBar: num must be None or an int > 0, got {!r}".format(num))
        self._num = num
        term_width = shutil.get_terminal_size((80, 20)).columns
        self._width = max(10, min(width, min(int(term_width * 0.6), term_width - 50)))
        self._verbose = verbose
        self._file = file
        self._total_width = 0
        self.name = name
        self._start = time.time() if start else None
        self._last_update = 0.0

    @property
    def file(self):
        return self._file if self._file is not None else sys.stdout

    def _dynamic(self):
        f = self.file
        return hasattr(f, "isatty") and f.isatty()

    def start(self):
        self.file.flush()
        self._start = time.time()

    def update(self, current_num, values=()):
        """Shows progress at step `current_num` with (name, value) pairs; a list value shows each item."""
        now = time.time()
        if self._start is None:
            self._start = now
        time_per_unit = (now - self._start) / current_num if current_num else 0.0

        if self._num is not None:
            digits = len(str(self._num))
            count = "{} {:>{}}/{}".format(self.name, current_num, digits, self._num)
        else:
            count = "{} {:3}".format(self.name, current_num)

        info = ""
        for k, val in values:
            info += " - {}:".format(k)
            for v in (val if isinstance(val, (list, tuple)) else [val]):
                info += " " + _format_value(v)
        if self._num is not None and current_num < self._num:
            info += " - ETA: " + _format_eta(time_per_unit * (self._num - current_num))
        info += " - " + _format_rate(time_per_unit, self.name)

        f = self.file
        if self._verbose == 1 and self._dynamic():
            bar = count + " ["
            if self._num is not None:
                filled = int(self._width * min(1.0, float(current_num) / self._num))
                if filled > 0:
                    bar += "=" * (filled - 1) + (">" if current_num < self._num else "=")
                bar += "." * (self._width - filled)
            bar += "]"
            line = bar + info
            prev = self._total_width
            self._total_width = len(line)
            f.write("\r" + line + " " * max(0, prev - len(line)))
            if self._num is None or current_num >= self._num:
                f.write("\n")
                self._total_width = 0
        else:
            f.write(count + info + "\n")
        f.flush()
        self._last_update = now
