"""oar-sim: the simulated accelerator backend for oar, shipped as a plugin wheel.

Nothing to import by hand: the wheel registers `plugin_dir` in the "oar.plugins" entry point group and
`import oar` loads liboar_plugin_sim.so from this folder, giving the device type "sim" (sim:0, sim:1).
"""
import os


def plugin_dir():
    """The folder holding liboar_plugin_sim.so (what the "oar.plugins" entry point returns)."""
    return os.path.dirname(os.path.abspath(__file__))
