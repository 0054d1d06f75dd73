"""oar_custom_device: the custom_cpu sample backend for oar, as a plugin wheel.

Nothing to import by hand: the wheel registers `plugin_dir` in the "oar.plugins" entry point group and
`import oar` loads liboar_plugin_custom_cpu.so from this folder, giving the device type "custom_cpu".
"""
import os


def plugin_dir():
    """The folder holding liboar_plugin_custom_cpu.so (what the "oar.plugins" entry point returns)."""
    return os.path.dirname(os.path.abspath(__file__))
