"""oar-rocm: the AMD GPU backend for oar (device type "gpu"), shipped as a plugin wheel.

Nothing to import by hand: the wheel registers `plugin_dir` in the "oar.plugins" entry point group, and
`import oar` calls it, then loads liboar_plugin_rocm.so from this folder. The plugin needs the HIP runtime
(libamdhip64.so.5) from the system's ROCm; without it, or without an AMD GPU, the plugin is refused and
`python -m oar.utils.doctor` says why. No AMD GPU was available to test this backend: it is build-checked
only (docs/rocm.md).
"""
import os


def plugin_dir():
    """The folder holding liboar_plugin_rocm.so (what the "oar.plugins" entry point returns)."""
    return os.path.dirname(os.path.abspath(__file__))
