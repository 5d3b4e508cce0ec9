"""The GPU-measured vectors shipped with the project (tests/data/hw_vectors/hw_vectors.tar.xz,
BSD-2: tests/data/hw_vectors/LICENCE), unpacked once per test process into a temporary folder,
so that a fresh clone without ../shared tests them."""
from __future__ import annotations

import atexit
import functools
import shutil
import tarfile
import tempfile
from pathlib import Path

ARCHIVE = Path(__file__).resolve().parent / "data" / "hw_vectors" / "hw_vectors.tar.xz"


@functools.cache
def hw_vectors_dir() -> Path:
    """The unpacked ``hw_vectors`` tree (one folder per device, one .npz per set)."""
    dest = Path(tempfile.mkdtemp(prefix="hw_vectors_"))
    atexit.register(shutil.rmtree, dest, True)
    with tarfile.open(ARCHIVE, "r:xz") as t:
        t.extractall(dest, filter="data")
    return dest / "hw_vectors"
