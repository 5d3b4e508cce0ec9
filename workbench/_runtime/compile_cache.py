"""Compiled kernels cached by the content of their sources, not by where the sources lie.

Numba caches a ``cache=True`` kernel's machine code beside its source file (or under
``NUMBA_CACHE_DIR`` in a folder named after the source's path) and calls it fresh while the
file's modification time and size are unchanged.  Keyed by path, a second clone, a second
virtual environment or a wheel installed into site-packages compiles every kernel again:
about 640 CPU seconds for the whole test suite, 250 s of README (b)'s cold run on a 2-core
machine (``benchmarks/measured/first_run_tests.txt``; issue 53).

:func:`install`, called by ``import workbench`` before any kernel module loads, puts one
cache locator in front of numba's own.  For a kernel defined in the compiled layers of the
package (:data:`COMPILED_FOLDERS`: number formats, the exact reference and the engine), it
answers:

* the folder: ``<root>/<digest>/<module path inside the package>``, where ``root`` is
  ``$WORKBENCH_CACHE_DIR``, else ``$NUMBA_CACHE_DIR``, else ``$XDG_CACHE_HOME/workbench``
  (``~/.cache/workbench``), and ``digest`` the SHA-256 of every ``.py`` file of those
  folders (relative path and bytes);
* the freshness stamp: the same digest.

So two copies of the same sources share one cache wherever they lie, and a change to any
file of the compiled layers starts an empty one.  The whole-layer digest is stricter than
numba's own per-file stamp, on purpose: numba inlines a kernel's callees from other
modules into its machine code, so a per-file key shared between two versions of the
package could hand one version the other's callee (a wrong bit, silently).  The layer
rules (``tests/test_import_graph.py``) keep kernels from importing anything above the
engine, so nothing outside these folders is compiled into them.

Numba's index also keys each entry by its own version, the Python version, the signature
and the CPU (name and features), so machines and interpreters never share an entry.
Kernels outside these folders (a user's own ``@njit(cache=True)``) keep numba's locators.
Where the cache folder cannot be written, or numba's locator API differs from the one
this module knows, numba's own behaviour stays in place.  ``WORKBENCH_CACHE_DIR=off``
turns the locator off.  Folders of other digests not used for :data:`KEEP_DAYS` days are
removed when a process first uses its own (the current one's time stamp is renewed then).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

#: The package folder whose compiled layers are keyed.
PACKAGE = Path(__file__).resolve().parents[1]

#: Folders of the package (relative to it) that hold every ``@njit(cache=True)`` kernel and
#: everything such a kernel calls.
COMPILED_FOLDERS = ("numbers", "engine", "_runtime")

#: Days after which another digest's cache folder, unused, is removed.
KEEP_DAYS = 14

_OFF = "off"
_DIGEST = re.compile(r"[0-9a-f]{20}")


def source_digest(package: Path = PACKAGE, folders: tuple[str, ...] = COMPILED_FOLDERS) -> str:
    """SHA-256 (first 20 hex digits) over the relative path and bytes of every ``.py`` file in
    ``folders`` of ``package``, in sorted order: equal for two copies of the same sources."""
    digest = hashlib.sha256()
    files = sorted(p for folder in folders for p in (package / folder).rglob("*.py"))
    for path in files:
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def cache_root(env: os._Environ[str] | dict[str, str] = os.environ) -> Path | None:
    """The folder under which compiled kernels are kept, or None where the locator is off."""
    chosen = env.get("WORKBENCH_CACHE_DIR") or env.get("NUMBA_CACHE_DIR")
    if chosen == _OFF:
        return None
    if chosen:
        return Path(chosen)
    base = env.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (KeyError, RuntimeError):     # no home folder to be found: numba's own locators
            return None
    return Path(base) / "workbench"


def make_locator(package: Path, root: Path, folders: tuple[str, ...] = COMPILED_FOLDERS) -> type | None:
    """A numba cache-locator class keyed by :func:`source_digest` of ``package`` under ``root``,
    or None where this numba has no locator API of the known shape."""
    try:
        from numba.core import caching
    except ImportError:
        return None
    base = getattr(caching, "_CacheLocator", None)
    if base is None:
        return None
    package = package.resolve()
    compiled = tuple(package / folder for folder in folders)
    state: dict[str, str] = {}

    def digest() -> str:        # computed on the first kernel, once per process
        if "digest" not in state:
            state["digest"] = source_digest(package, folders)
        return state["digest"]

    def first_use() -> None:    # once per process, when the first kernel's folder exists
        if "used" not in state:
            state["used"] = "yes"
            prune(root, keep=digest())

    class ContentKeyedLocator(base):  # type: ignore[misc, valid-type]
        """Numba cache locator: folder and freshness from the digest of the compiled layers."""

        def __init__(self, py_func: object, py_file: str) -> None:
            source = Path(py_file).resolve()
            self._lineno = py_func.__code__.co_firstlineno  # type: ignore[attr-defined]
            relative = source.parent.relative_to(package)
            self._cache_path = str(root / digest() / relative)

        def get_cache_path(self) -> str:
            return self._cache_path

        def get_source_stamp(self) -> str:
            return digest()

        def get_disambiguator(self) -> str:
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func: object, py_file: str) -> ContentKeyedLocator | None:
            source = Path(py_file).resolve()
            if not any(source.is_relative_to(folder) for folder in compiled):
                return None         # not a kernel of the package: numba's own locators
            locator = cls(py_func, py_file)
            try:
                locator.ensure_cache_path()
            except OSError:         # not writable here: numba's own locators
                return None
            first_use()
            return locator

    return ContentKeyedLocator


def prune(root: Path, keep: str, days: float = KEEP_DAYS) -> list[Path]:
    """Renew the time stamp of ``root/keep`` and remove the other digest folders of ``root``
    not used for ``days`` days; returns the folders removed.  Errors (another process removing
    the same folder, no permission) leave a folder in place."""
    now = time.time()
    try:
        os.utime(root / keep, (now, now))
        entries = list(root.iterdir())
    except OSError:
        return []
    removed = []
    for entry in entries:
        if entry.name == keep or not _DIGEST.fullmatch(entry.name) or not entry.is_dir():
            continue
        try:
            if now - entry.stat().st_mtime > days * 86400:
                shutil.rmtree(entry)
                removed.append(entry)
        except OSError:
            continue
    return removed


class CompileWatch:
    """Context manager counting numba compilations (not cache loads) of functions outside
    numba itself (numba's own overloads compiled along the way are not counted) while it is open.

    ``on_compile(name)`` (optional) is called as each compilation starts, with the compiled
    function's name.  Nested compilations are counted too: compiling a kernel compiles every
    jitted function it calls, so one task can start many.
    """

    def __init__(self, on_compile: Callable[[str], None] | None = None) -> None:
        self.compiled = 0
        self._on_compile = on_compile
        self._listener: Any = None

    def __enter__(self) -> CompileWatch:
        from numba.core import event

        watch = self

        class _Listener(event.Listener):
            def on_start(self, ev: Any) -> None:
                func = getattr(ev.data.get("dispatcher"), "py_func", None)
                if getattr(func, "__module__", "").startswith("numba."):
                    return
                watch.compiled += 1
                if watch._on_compile is not None:
                    watch._on_compile(getattr(func, "__name__", "?"))

            def on_end(self, ev: Any) -> None:
                pass

        self._listener = _Listener()
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc: Any) -> None:
        from numba.core import event

        event.unregister("numba:compile", self._listener)


def cache_folder() -> Path | None:
    """Where this package's compiled kernels are kept (``<root>/<digest>``), or None where the
    content-keyed cache is off."""
    root = cache_root()
    return None if root is None else root / source_digest()


@contextlib.contextmanager
def compile_notice(stream: TextIO | None = None) -> Iterator[None]:
    """While open, say once on ``stream`` (default stderr) when numba starts compiling a
    kernel of the package or the user's: the pause that follows is a first run's, once per
    machine and version.  The command line opens it for commands without a progress bar of
    their own, when stderr is a terminal."""
    out = stream if stream is not None else sys.stderr
    told: list[str] = []

    def tell(name: str) -> None:
        if not told:
            told.append(name)
            folder = cache_folder()
            where = str(folder) if folder is not None else "numba's cache"
            print(f"workbench: compiling kernels for their first use ({name} first; kept in {where}, "
                  "later runs load them)...", file=out, flush=True)

    with CompileWatch(on_compile=tell):
        yield


def install() -> bool:
    """Put the content-keyed locator first among numba's (once per process); returns whether
    it is in place.  Changes nothing where the locator is off (:func:`cache_root`) or numba's
    locator list is not where this module expects it."""
    try:
        from numba.core import caching
    except ImportError:
        return False
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if not isinstance(classes, list):
        return False
    if any(getattr(cls, "__name__", "") == "ContentKeyedLocator" for cls in classes):
        return True
    root = cache_root()
    if root is None:
        return False
    locator = make_locator(PACKAGE, root)
    if locator is None:
        return False
    classes.insert(0, locator)
    return True


__all__ = ["PACKAGE", "COMPILED_FOLDERS", "KEEP_DAYS", "source_digest", "cache_root", "cache_folder", "make_locator",
           "prune", "CompileWatch", "compile_notice", "install"]
