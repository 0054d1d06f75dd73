"""oar.framework: framework-level utilities (save/load in oar.framework.io)."""
