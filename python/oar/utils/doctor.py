"""What the runtime found: every candidate plugin (loaded, or skipped and why), the devices of each device
type and the kernels each registered. The same report as the C++ `oar-doctor`.

    python -m oar.utils.doctor [-v | --kernels]
"""
import sys

from .. import _C


def report(verbose=False):
    """The report as a string."""
    major, minor, window = _C.abi_version()
    lines = ["oar device ABI {}.{} (accepts minors within +/-{})".format(major, minor, window), "plugin search path:"]
    lines += ["  " + d for d in _C.plugin_search_path()]
    lines += ["", "plugins:"]
    records = _C.plugin_records()
    if not records:
        lines.append("  (no candidate liboar_plugin_*.so found)")
    for r in records:
        lines.append("  " + r.path)
        if r.loaded:
            extra = ", " + r.vendor_versions if r.vendor_versions else ""
            lines.append("    loaded: {} {} (device type '{}', ABI {}.{}{}), {} device(s), {} kernels".format(
                r.name, r.version, r.device_type, r.abi_major, r.abi_minor, extra, r.num_devices, r.num_kernels))
        else:
            lines.append("    skipped: " + r.reason)
        lines += ["    warning: " + w for w in r.warnings]
    lines += ["", "devices:"]
    for _, name, available, count in _C.device_types():
        if not available:
            lines.append("  {}: not available".format(name))
            continue
        for i in range(count):
            place = name if name == "cpu" else "{}:{}".format(name, i)
            try:
                p = _C.device_properties(place)
                lines.append("  {}: {}, {} MiB{}".format(p["place"], p["name"], p["total_memory"] >> 20,
                                                         ", host accessible" if p["host_accessible"] else ""))
            except Exception as e:  # noqa: BLE001 -- report it, as oar-doctor does
                lines.append("  {}:{}: cannot open: {}".format(name, i, e))
        kernels = _C.kernels_of(name)
        lines.append("    kernels: {} ops".format(len(kernels)))
        if verbose:
            lines += ["      {}: {}".format(op, " ".join(dtypes)) for op, dtypes in kernels]
    # Device types whose plugins were all refused, with the loader's reasons (a gpu plugin without a GPU).
    for name in _C._refused_device_types():
        lines.append("  {}: not available: {}".format(name, _C._device_type_refusal(name)))
    return "\n".join(lines) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    verbose = bool(argv) and argv[0] in ("-v", "--kernels")
    sys.stdout.write(report(verbose))
    return 0 if "cpu" in [name for _, name, available, _ in _C.device_types() if available] else 1


if __name__ == "__main__":
    sys.exit(main())
