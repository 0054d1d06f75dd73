"""Plugins installed as Python packages: a backend wheel declares an entry point in the group
"oar.plugins" whose object is a path (str or os.PathLike), a list of paths, or a callable returning
either. Each path is a plugin .so file, or a directory whose liboar_plugin_*.so files are loaded.

    # the vendor wheel's pyproject.toml
    [project.entry-points."oar.plugins"]
    myaccel = "oar_myaccel:plugin_path"

They are loaded at `import oar`, after OAR_PLUGIN_PATH, CUSTOM_DEVICE_ROOT and the plugins shipped with
oar; a file name loaded earlier shadows an entry point's file of the same name. A broken
entry point or plugin warns and is skipped: it never stops oar from importing. A plugin that only found
no device (a GPU wheel where there is no GPU) is skipped without a warning. The loader's records
(oar.utils.doctor, oar._C.plugin_records()) say why a file was refused."""
import glob
import importlib.metadata
import os
import warnings

from . import _C

GROUP = "oar.plugins"


def _files(path):
    path = os.fspath(path)
    if os.path.isdir(path):
        return sorted(glob.glob(os.path.join(path, "liboar_plugin_*.so")))
    return [path]


def _no_device(rec):
    """A plugin that loaded and works but found no device (a GPU wheel on a machine without a GPU, or
    without a driver) is the normal case there, not a broken install: no warning. Its reason stays in the
    records, the doctor and every call that asks for that device type."""
    return rec.reason.startswith(("found no usable device", "found no devices"))


def load_entry_point_plugins():
    """Loads the plugins every installed "oar.plugins" entry point names; returns their records."""
    records = []
    try:
        eps = importlib.metadata.entry_points(group=GROUP)
    except Exception as e:  # a broken installed distribution must not break import oar
        warnings.warn("oar: could not list '{}' entry points: {}".format(GROUP, e), RuntimeWarning)
        return records
    # The search path's rule, applied to entry points too: a plugin file name already loaded (from
    # OAR_PLUGIN_PATH, CUSTOM_DEVICE_ROOT or the bundled plugins) shadows a later one of the same name.
    # So a core wheel that bundles sim and an installed oar-sim wheel give one sim, and no warning.
    loaded = {os.path.basename(r.path) for r in _C.plugin_records() if r.loaded}
    for ep in eps:
        try:
            target = ep.load()
            paths = target() if callable(target) else target
            if isinstance(paths, (str, os.PathLike)):
                paths = [paths]
            for path in paths:
                for f in _files(path):
                    if os.path.basename(f) in loaded:
                        continue
                    rec = _C.load_plugin(f)
                    if rec.loaded:
                        loaded.add(os.path.basename(f))
                    records.append(rec)
                    if not rec.loaded and not _no_device(rec):
                        warnings.warn("oar: plugin '{}' from entry point '{}' was not loaded: {}".format(
                            f, ep.name, rec.reason), RuntimeWarning)
        except Exception as e:
            warnings.warn("oar: plugin entry point '{}' ({}) failed: {}: {}".format(
                ep.name, ep.value, type(e).__name__, e), RuntimeWarning)
    return records
