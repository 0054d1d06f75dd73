"""oar.testing: test tools shipped with oar for people who extend it.

- `oar.testing.plugin_conformance`: the device-plugin conformance suite
  (`python -m oar.testing.plugin_conformance --device <type>`; docs/plugin_guide.md).
- `oar.testing.ops`: the op suite, every op on its declared samples on any device with the CPU as the
  oracle (`python -m oar.testing.ops --device sim:0`; docs/ops.md "Adding an op").
"""
