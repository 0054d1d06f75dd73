"""Helpers shared by the data sets: where files are looked for, and the error raised when none is found."""
import os

__all__ = []


def cache_dir(name):
    """oar's own data set cache folder, ~/.cache/oar/dataset/<name> (XDG_CACHE_HOME is honoured)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "oar", "dataset", name)


def find_file(filename, folders):
    """The first folders[i]/filename that exists, or None."""
    for d in folders:
        p = os.path.join(d, filename)
        if os.path.isfile(p):
            return p
    return None


def missing_file_error(what, filename, folders, how_to_provide, download):
    looked = ", ".join(os.path.join(d, filename) for d in folders)
    msg = "{}: file {!r} not found (looked in: {}). ".format(what, filename, looked)
    if download:
        msg += "oar does not download data sets (no network access is assumed). "
    msg += how_to_provide
    return FileNotFoundError(msg)
