"""oar.testing: test tools shipped with oar for people who extend it.

- `oar.testing.plugin_conformance`: the device-plugin conformance suite
  (`python -m oar.testing.plugin_conformance --device <type>`; docs/plugin_guide.md).
"""
