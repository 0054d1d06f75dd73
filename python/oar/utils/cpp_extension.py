"""oar.utils.cpp_extension: building and loading custom C++ ops (Paddle 2.x's paddle.utils.cpp_extension).

Three ways to use a custom op library (docs/custom_op.md, "Building and loading"):

    load(name, sources, ...)       compile on first use into a cache folder, load, return the op module
    setup(name=..., ext_modules=CppExtension(sources=[...]))
                                   a setup.py: `pip install --no-build-isolation .` installs a Python
                                   package `name` whose import loads the library and gives the op functions
    load_op_library(path)          load a library built by any other means (CMake, make, ...)

A custom op library is compiled against the SDK headers of the installed package (oar.sysconfig) and does
not link liboar_core: everything crosses into the core through the C ABI (oar/custom_op_api.h).

This module is imported by `import oar`, so it imports only os, sys and threading at module level; the
rest (hashlib, json, subprocess, setuptools, ...) when a function needs it.
"""
import os
import sys
import threading

__all__ = ["load", "setup", "CppExtension", "CUDAExtension", "BuildExtension", "BuildError",
           "get_build_directory", "load_op_library", "CUDA_HOME"]

# -fvisibility=hidden: the library exports only oar_custom_op_init (the header marks it visible), so two
# libraries with same-named helper functions never bind to each other's.
_CXX_FLAGS = ["-std=c++17", "-fPIC", "-O2", "-fvisibility=hidden"]
_CUDA_FLAGS = ["-std=c++17", "-O2", "-Xcompiler", "-fPIC,-fvisibility=hidden"]
_CUDA_SUFFIXES = (".cu",)
_HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".cuh", ".inl")

# name -> (build hash, library path, module) for the extensions load() has loaded in this process.
_loaded = {}
_loaded_mutex = threading.Lock()


class BuildError(RuntimeError):
    """Compiling or linking a custom op library failed. The message carries the failing command and the
    compiler's output; `.output` holds the output alone and `.command` the command (a list)."""

    def __init__(self, message, command=None, output=""):
        super().__init__(message)
        self.command = command
        self.output = output


def load_op_library(path):
    """Loads a prebuilt custom op library (a .so built against oar/extension.h or paddle/extension.h) and
    returns a module with one Python function per forward op."""
    from ._custom_op import load_op_library as _load_op_library
    return _load_op_library(path)


# ---- where things are -------------------------------------------------------------------------------

def get_build_directory(verbose=False):
    """The root of the extension cache: $OAR_EXTENSION_DIR, else $PADDLE_EXTENSION_DIR (Paddle's name),
    else ~/.cache/oar_extensions. load() builds extension `name` in <root>/<name>. Created if missing."""
    root = os.environ.get("OAR_EXTENSION_DIR") or os.environ.get("PADDLE_EXTENSION_DIR")
    if not root:
        root = os.path.join(os.path.expanduser("~"), ".cache", "oar_extensions")
    root = os.path.abspath(os.path.expanduser(root))
    if not os.path.isdir(root):
        if verbose:
            print("oar.utils.cpp_extension: creating the extension folder {}".format(root))
        os.makedirs(root, exist_ok=True)
    return root


def _sdk_include():
    import oar.sysconfig
    return oar.sysconfig.get_include()


def _find_cxx():
    """The C++ compiler command as a list: $CXX (may carry a launcher or flags, e.g. "ccache g++"), else
    c++ or g++ from the PATH."""
    import shlex
    import shutil
    if os.environ.get("CXX", "").strip():
        return shlex.split(os.environ["CXX"])
    return [shutil.which("c++") or shutil.which("g++") or "c++"]


def _find_nvcc():
    """nvcc from $CUDA_HOME / $CUDA_PATH, the PATH, or /usr/local/cuda; None when there is none."""
    import shutil
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
            return os.path.join(home, "bin", "nvcc")
    found = shutil.which("nvcc")
    if found:
        return found
    if os.access("/usr/local/cuda/bin/nvcc", os.X_OK):
        return "/usr/local/cuda/bin/nvcc"
    return None


def _cuda_lib_dir(nvcc):
    home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
        d = os.path.join(home, sub)
        if os.path.isdir(d):
            return d
    return None


# ---- one build: the commands, the hash, running them ---------------------------------------------------

class _Build:
    """The commands that turn `sources` into one shared library at `output`, and the hash of everything
    they depend on (sources and the headers next to them, flags, compilers, the oar version)."""

    def __init__(self, name, sources, extra_cxx_cflags=None, extra_cuda_cflags=None, extra_ldflags=None,
                 extra_include_paths=None, extra_library_paths=None, objdir=None):
        if not isinstance(name, str) or not name or not name.replace("_", "a").isalnum():
            raise ValueError("extension name must be a non-empty identifier (letters, digits, _), got {!r}"
                             .format(name))
        if isinstance(sources, str):
            sources = [sources]
        if not sources:
            raise ValueError("extension '{}': no sources given".format(name))
        self.name = name
        self.sources = [os.path.abspath(s) for s in sources]
        for s in self.sources:
            if not os.path.isfile(s):
                raise FileNotFoundError("extension '{}': source file {} does not exist".format(name, s))
        self.cxx_flags = list(extra_cxx_cflags or [])
        self.cuda_flags = list(extra_cuda_cflags or [])
        self.ldflags = list(extra_ldflags or [])
        self.includes = [os.path.abspath(p) for p in (extra_include_paths or [])] + [_sdk_include()]
        self.cxx = _find_cxx()
        self.cuda_sources = [s for s in self.sources if s.endswith(_CUDA_SUFFIXES)]
        self.nvcc = None
        if self.cuda_sources:
            self.nvcc = _find_nvcc()
            if self.nvcc is None:
                raise RuntimeError(
                    "extension '{}': {} is CUDA source but nvcc was not found (looked in $CUDA_HOME/bin, "
                    "$CUDA_PATH/bin, the PATH and /usr/local/cuda/bin); install the CUDA toolkit or build "
                    "without the .cu files".format(name, ", ".join(os.path.basename(s) for s in self.cuda_sources)))
        self.library_paths = list(extra_library_paths or [])
        self.objdir = objdir

    def commands(self, output):
        """(compile commands, link command) writing objects to self.objdir and the library to `output`."""
        inc = ["-I" + p for p in self.includes]
        if self.cuda_sources:
            # Lets a .cc file call into its .cu part only when there is one (Paddle defines the second).
            inc = ["-DOAR_WITH_CUDA", "-DPADDLE_WITH_CUDA"] + inc
        objects, compiles = [], []
        for i, src in enumerate(self.sources):
            obj = os.path.join(self.objdir, "{}_{}.o".format(i, os.path.splitext(os.path.basename(src))[0]))
            objects.append(obj)
            if src in self.cuda_sources:
                compiles.append([self.nvcc, "-c", src, "-o", obj] + _CUDA_FLAGS + inc + self.cuda_flags)
            else:
                compiles.append(self.cxx + ["-c", src, "-o", obj] + _CXX_FLAGS + inc + self.cxx_flags)
        # --no-undefined: a missing definition (a forgotten source) fails here, naming the symbol, rather
        # than when the library is loaded; `-Wl,-z,undefs` in extra_ldflags turns it off again.
        link = self.cxx + ["-shared", "-Wl,--no-undefined", "-o", output] + objects
        link += ["-L" + os.path.abspath(p) for p in self.library_paths]
        if self.cuda_sources:
            lib = _cuda_lib_dir(self.nvcc)
            if lib:
                link += ["-L" + lib, "-Wl,-rpath," + lib]
            link += ["-lcudart"]
        link += self.ldflags
        return compiles, link

    def digest(self):
        import hashlib
        import json

        import oar
        h = hashlib.sha256()
        desc = {"oar": getattr(oar, "__version__", "?"), "include": self.includes, "cxx": self.cxx,
                "nvcc": self.nvcc, "cxx_flags": self.cxx_flags, "cuda_flags": self.cuda_flags,
                "ldflags": self.ldflags, "library_paths": self.library_paths, "sources": self.sources}
        h.update(json.dumps(desc, sort_keys=True).encode())
        # The sources and the headers beside them (a source's own #include "x.h" is usually there).
        files = list(self.sources)
        for d in sorted({os.path.dirname(s) for s in self.sources}):
            files += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(_HEADER_SUFFIXES))
        for f in files:
            h.update(f.encode() + b"\0")
            with open(f, "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
        return h.hexdigest()

    def run(self, output, verbose=False):
        """Compiles (the sources in parallel, up to $OAR_EXTENSION_JOBS or the CPU count at once) and links
        into `output` (written whole or not at all: linked to a temporary name and renamed). Raises
        BuildError carrying the compiler's output on failure (the first failing source in order)."""
        import shlex
        os.makedirs(self.objdir, exist_ok=True)
        tmp = "{}.tmp{}".format(output, os.getpid())
        compiles, link = self.commands(tmp)
        jobs = int(os.environ.get("OAR_EXTENSION_JOBS") or os.cpu_count() or 1)
        try:
            if verbose:
                for cmd in compiles:
                    print("oar.utils.cpp_extension: " + shlex.join(cmd), flush=True)
            if jobs > 1 and len(compiles) > 1:
                from concurrent.futures import ThreadPoolExecutor
                with ThreadPoolExecutor(max_workers=min(jobs, len(compiles))) as pool:
                    results = list(pool.map(_run_command, compiles))
            else:
                results = []
                for cmd in compiles:  # stop at the first failure
                    results.append(_run_command(cmd))
                    if results[-1].returncode != 0:
                        break
            for src, cmd, r in zip(self.sources, compiles, results):
                self._check(cmd, r, "compiling " + src, verbose)
            if verbose:
                print("oar.utils.cpp_extension: " + shlex.join(link), flush=True)
            self._check(link, _run_command(link), "linking", verbose)
            os.replace(tmp, output)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def _check(self, cmd, r, what, verbose):
        import shlex
        if verbose and r.stdout:
            print(r.stdout, end="", flush=True)
        if r.returncode != 0:
            raise BuildError("extension '{}': {} failed (exit status {}):\n$ {}\n{}".format(
                self.name, what, r.returncode, shlex.join(cmd), r.stdout), command=cmd, output=r.stdout)


def _run_command(cmd):
    import subprocess
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


class _FileLock:
    """An exclusive flock on a file: two processes building the same extension take turns; the second
    then finds the first's result in the cache."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def __enter__(self):
        import fcntl
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        import fcntl
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


# ---- load: compile on first use ---------------------------------------------------------------------------

def load(name, sources, extra_cxx_cflags=None, extra_cuda_cflags=None, extra_ldflags=None,
         extra_include_paths=None, build_directory=None, verbose=False, extra_library_paths=None):
    """Compiles the custom op sources into <build_directory or get_build_directory()>/<name>/<name>.so
    unless that library is up to date, loads it and returns a module with one function per forward op.

    The library is rebuilt when the sources (or the headers in their folders), the flags, the compilers
    or the oar version change; otherwise the cached library is loaded without compiling. `.cu` sources
    are compiled with nvcc (extra_cuda_cflags), the others with $CXX or c++ (extra_cxx_cflags), both with
    the SDK's include folder; extra_ldflags and extra_library_paths (-L) go to the link. verbose prints
    the commands and compiler output. A failed compile raises BuildError with the compiler's output."""
    import json

    root = os.path.abspath(build_directory) if build_directory else get_build_directory(verbose)
    folder = os.path.join(root, name)
    build = _Build(name, sources, extra_cxx_cflags, extra_cuda_cflags, extra_ldflags, extra_include_paths,
                   extra_library_paths, objdir=os.path.join(folder, "obj"))
    digest = build.digest()
    library = os.path.join(folder, name + ".so")
    stamp = os.path.join(folder, name + ".json")
    os.makedirs(folder, exist_ok=True)
    with _FileLock(os.path.join(folder, ".lock")):
        cached = None
        if os.path.isfile(stamp) and os.path.isfile(library):
            with open(stamp) as f:
                try:
                    cached = json.load(f).get("hash")
                except ValueError:
                    cached = None
        if cached == digest:
            if verbose:
                print("oar.utils.cpp_extension: extension '{}' is up to date: {}".format(name, library))
        else:
            if verbose:
                print("oar.utils.cpp_extension: building extension '{}' in {}".format(name, folder))
            if os.path.exists(stamp):
                os.unlink(stamp)
            build.run(library, verbose=verbose)
            compiles, link = build.commands(library)
            with open(stamp + ".tmp", "w") as f:
                json.dump({"hash": digest, "library": library, "commands": compiles + [link]}, f, indent=1)
            os.replace(stamp + ".tmp", stamp)
    with _loaded_mutex:
        seen = _loaded.get(name)
        if seen is not None:
            if seen[0] == digest and seen[1] == library:
                return seen[2]
            raise RuntimeError(
                "extension '{}' was rebuilt ({}), but this process already loaded an earlier build of it from "
                "{}; its ops stay registered until the process ends: start a new Python process to use the "
                "new build".format(name, library, seen[1]))
        module = load_op_library(library)
        _loaded[name] = (digest, library, module)
        return module


# ---- setup: setuptools ---------------------------------------------------------------------------------------

def _extension(sources, cuda, *args, **kwargs):
    import setuptools
    if isinstance(sources, str):
        sources = [sources]
    # The name is given by setup(name=...); Paddle's CppExtension takes none either.
    ext = setuptools.Extension(kwargs.pop("name", "oar_custom_ops"), list(sources), *args, **kwargs)
    ext._oar_cuda = cuda
    return ext


def CppExtension(sources, *args, **kwargs):
    """A setuptools.Extension for C++ custom op sources. Keyword arguments as setuptools.Extension:
    extra_compile_args (a list, or a dict {"cxx": [...], "nvcc": [...]} as in Paddle), include_dirs,
    extra_link_args, library_dirs, libraries, define_macros."""
    return _extension(sources, False, *args, **kwargs)


def CUDAExtension(sources, *args, **kwargs):
    """As CppExtension; `.cu` sources are compiled with nvcc (extra_compile_args={"nvcc": [...]})."""
    return _extension(sources, True, *args, **kwargs)


def _build_ext_base():
    from setuptools.command.build_ext import build_ext
    return build_ext


def _make_build_extension():
    class BuildExtension(_build_ext_base()):
        """setuptools' build_ext compiling custom op libraries with oar's flags (as load() does) into a
        plain `lib<name>.so` inside the package. Accepted under this name for Paddle source compatibility
        (`cmdclass={"build_ext": BuildExtension}`); setup() uses it by default."""

        _options = {}

        @classmethod
        def with_options(cls, **options):
            # Paddle: BuildExtension.with_options(no_python_abi_suffix=True, ...). oar's library has no
            # Python ABI suffix anyway; the options are accepted and ignored.
            return type(cls.__name__, (cls,), {"_options": dict(options)})

        def get_ext_filename(self, fullname):
            parts = fullname.split(".")
            return os.path.join(*parts) + ".so"

        def build_extension(self, ext):
            cflags = ext.extra_compile_args or []
            if isinstance(cflags, dict):
                cxx, cuda = list(cflags.get("cxx", [])), list(cflags.get("nvcc", []))
            else:
                cxx, cuda = list(cflags), []  # a plain list is for the C++ compiler
            macros = []
            for m in ext.define_macros or []:
                macros.append("-D{}".format(m[0]) if m[1] is None else "-D{}={}".format(m[0], m[1]))
            ldflags = ["-L" + d for d in ext.library_dirs or []] + ["-l" + l for l in ext.libraries or []]
            ldflags += list(ext.extra_link_args or [])
            output = os.path.abspath(self.get_ext_fullpath(ext.name))
            os.makedirs(os.path.dirname(output), exist_ok=True)
            name = getattr(ext, "_oar_name", ext.name.replace(".", "_"))
            build = _Build(name, ext.sources, cxx + macros, cuda + macros, ldflags, ext.include_dirs,
                           objdir=os.path.join(os.path.abspath(self.build_temp), ext.name.replace(".", "_")))
            build.run(output, verbose=self.verbose)

    return BuildExtension


_build_extension_class = None


def __getattr__(name):
    # BuildExtension subclasses setuptools' build_ext: made on first use so `import oar` never imports
    # setuptools.
    global _build_extension_class
    if name == "BuildExtension":
        if _build_extension_class is None:
            _build_extension_class = _make_build_extension()
        return _build_extension_class
    if name == "CUDA_HOME":  # as Paddle's/torch's: the CUDA toolkit folder, None without nvcc
        nvcc = _find_nvcc()
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc))) if nvcc else None
    raise AttributeError("module 'oar.utils.cpp_extension' has no attribute '{}'".format(name))


_STUB = '''"""Custom ops of the extension {name!r}, built by oar.utils.cpp_extension.setup: importing this
package loads {lib} and gives its ops as functions."""
import os as _os

from oar.utils.cpp_extension import load_op_library as _load_op_library

__library__ = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), {lib!r})
_ops = _load_op_library(__library__)
__all__ = [_n for _n in dir(_ops) if not _n.startswith("_")]
globals().update({{_n: getattr(_ops, _n) for _n in __all__}})
'''


def setup(**attr):
    """setuptools.setup for a custom op project (Paddle's paddle.utils.cpp_extension.setup):

        setup(name="custom_ops", ext_modules=CppExtension(sources=["relu_op.cc"]))

    installs a Python package `name`; `import custom_ops` loads the library and gives the op functions.
    One extension per call, as in Paddle. Other arguments go to setuptools.setup."""
    import setuptools
    name = attr.get("name")
    if not isinstance(name, str) or not name.replace("_", "a").isalnum():
        raise ValueError("setup(name=...) must be a Python package name (letters, digits, _), got {!r}".format(name))
    exts = attr.pop("ext_modules", None)
    if exts is None:
        raise ValueError("setup(): ext_modules=CppExtension(...) or CUDAExtension(...) is required")
    if not isinstance(exts, (list, tuple)):
        exts = [exts]
    if len(exts) != 1:
        raise ValueError("setup(): exactly one CppExtension/CUDAExtension per package, got {}".format(len(exts)))
    ext = exts[0]
    lib = "lib{}.so".format(name)
    ext.name = "{}.lib{}".format(name, name)
    ext._oar_name = name

    # The package itself is generated: a folder holding the stub __init__.py, under ./build (setuptools
    # wants package_dir relative to the setup.py folder, which is the current directory when it runs).
    here = os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv and sys.argv[0] else os.getcwd()
    stub_dir = os.path.join(here, "build", "oar_extension", name)
    os.makedirs(stub_dir, exist_ok=True)
    with open(os.path.join(stub_dir, "__init__.py"), "w") as f:
        f.write(_STUB.format(name=name, lib=lib))
    attr["packages"] = list(attr.get("packages") or []) + [name]
    package_dir = dict(attr.get("package_dir") or {})
    package_dir[name] = os.path.relpath(stub_dir, here)
    attr["package_dir"] = package_dir
    attr["ext_modules"] = [ext]
    cmdclass = dict(attr.get("cmdclass") or {})
    base = __getattr__("BuildExtension")
    if not (isinstance(cmdclass.get("build_ext"), type) and issubclass(cmdclass["build_ext"], base)):
        cmdclass["build_ext"] = base
    attr["cmdclass"] = cmdclass
    attr.setdefault("zip_safe", False)
    attr.setdefault("version", "0.0.0")
    return setuptools.setup(**attr)
