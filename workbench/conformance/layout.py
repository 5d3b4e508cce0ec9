"""The layout of exported vectors on disk (docs/guide/vectors.md), written and read back.

A *set* is one folder: ``manifest.json`` plus the ``.npz`` files it lists.  An export of
several sets writes one folder per set under the target folder and an ``index.json``
listing them with the SHA-256 of each manifest.  Every array holds bit patterns as
unsigned integers (the format's encoding right-aligned in the smallest of uint8, uint16,
uint32, uint64 that holds it; integer formats in two's complement); the manifest
describes each format by its fields, so a reader needs no table of names.

Reading checks the layout name and version, that every listed file exists, and its
SHA-256: a file edited after export is refused, naming the file and both digests.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..numbers import formats as _formats

__all__ = ["LAYOUT", "LAYOUT_VERSION", "VectorsError", "format_record", "sha256", "write_set", "write_index",
           "read_manifest", "set_folders", "load_file"]

#: what ``manifest.json`` and ``index.json`` say in their ``layout`` field
LAYOUT = "workbench-vectors"
#: the layout version this workbench writes and reads
LAYOUT_VERSION = 1
MANIFEST = "manifest.json"
INDEX = "index.json"


class VectorsError(ValueError):
    """A vectors folder that cannot be read: missing, not a vectors folder, an unknown
    layout version, a file missing or changed since export (its SHA-256)."""


def format_record(fmt: str | _formats.FloatFormat | _formats.IntFormat) -> dict[str, Any]:
    """How the manifest describes a number format: every field a reader needs to decode it."""
    f = _formats.number_format(fmt)
    if isinstance(f, _formats.IntFormat):
        return {"name": f.name, "type": "int", "bits": f.width, "signed": f.signed,
                "dtype": np.dtype(_bits_dtype(f.width)).name}
    return {"name": f.name, "type": "float", "bits": f.width, "exp_bits": f.exp_bits, "man_bits": f.man_bits,
            "bias": f.bias, "special": f.special, "subnormals": f.subnormals, "signed": f.signed,
            "dtype": f.bits_dtype.name}


def _bits_dtype(width: int) -> type:
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
        if width <= np.dtype(dt).itemsize * 8:
            return dt
    raise ValueError(f"a {width}-bit format does not fit 64 bits")


def to_bits(x: np.ndarray, fmt: str | _formats.FloatFormat | _formats.IntFormat) -> np.ndarray:
    """Bit patterns of values of ``fmt`` (integers: two's complement, unsigned dtype)."""
    f = _formats.number_format(fmt)
    if isinstance(f, _formats.IntFormat):
        v = np.asarray(x, dtype=np.float64).astype(np.int64)
        return (v & ((1 << f.width) - 1)).astype(_bits_dtype(f.width))
    return _formats.to_bits(x, f)


def from_bits(bits: np.ndarray, fmt: str | _formats.FloatFormat | _formats.IntFormat) -> np.ndarray:
    """Values (float64) of bit patterns of ``fmt``."""
    f = _formats.number_format(fmt)
    if isinstance(f, _formats.IntFormat):
        v = np.asarray(bits).astype(np.int64)
        if f.signed:
            v = np.where(v >= 1 << (f.width - 1), v - (1 << f.width), v)
        return v.astype(np.float64)
    return _formats.from_bits(bits, f)


def sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_set(folder: Path, manifest: dict[str, Any], files: dict[str, dict[str, np.ndarray]],
              entries: dict[str, dict[str, Any]]) -> Path:
    """Write ``files`` (name -> arrays, each saved as an uncompressed ``.npz``) and
    ``manifest.json`` (``manifest`` plus the layout fields and a ``files`` list of
    ``entries[name]`` with each file's SHA-256) into ``folder``; the manifest's path."""
    folder.mkdir(parents=True, exist_ok=True)
    listed = []
    for name, arrays in files.items():
        path = folder / name
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]
        listed.append({"file": name, "sha256": sha256(path), **entries.get(name, {})})
    doc = {"layout": LAYOUT, "layout_version": LAYOUT_VERSION, **manifest, "files": listed}
    out = folder / MANIFEST
    out.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return out


def write_index(folder: Path, sets: list[Path], extra: dict[str, Any]) -> Path:
    """``index.json`` in ``folder``: the set folders (relative) and their manifests' SHA-256."""
    doc = {"layout": LAYOUT, "layout_version": LAYOUT_VERSION, **extra,
           "sets": [{"folder": s.relative_to(folder).as_posix(), "manifest_sha256": sha256(s / MANIFEST)}
                    for s in sets]}
    out = folder / INDEX
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return out


def _json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VectorsError(f"{path}: not a readable JSON file ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("layout") != LAYOUT:
        raise VectorsError(f"{path}: not a workbench vectors file (its 'layout' field is "
                           f"{doc.get('layout') if isinstance(doc, dict) else None!r}, expected {LAYOUT!r})")
    version = doc.get("layout_version")
    if version != LAYOUT_VERSION:
        raise VectorsError(f"{path}: layout_version {version!r} is unknown to workbench (it reads version "
                           f"{LAYOUT_VERSION}); export the vectors again or use the workbench that wrote them")
    return doc


def set_folders(folder: str | os.PathLike[str]) -> list[Path]:
    """The set folders of ``folder``: itself when it holds ``manifest.json``, else the sets
    its ``index.json`` lists (each manifest's SHA-256 checked)."""
    root = Path(folder)
    if not root.is_dir():
        raise VectorsError(f"{root}: no such folder (expected a folder written by 'workbench vectors export')")
    if (root / MANIFEST).is_file():
        return [root]
    if not (root / INDEX).is_file():
        raise VectorsError(f"{root}: holds neither {MANIFEST} nor {INDEX}: not a folder written by "
                           "'workbench vectors export'")
    doc = _json(root / INDEX)
    out = []
    for entry in doc.get("sets", []):
        sub = root / entry["folder"]
        if not (sub / MANIFEST).is_file():
            raise VectorsError(f"{root / INDEX} lists {entry['folder']!r}, which has no {MANIFEST}")
        got = sha256(sub / MANIFEST)
        if got != entry.get("manifest_sha256"):
            raise VectorsError(f"{sub / MANIFEST} was changed after export: SHA-256 {got}, the index says "
                               f"{entry.get('manifest_sha256')}")
        out.append(sub)
    return out


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of one set folder, after checking the layout version and the SHA-256 of
    every file it lists (:class:`VectorsError` names what is wrong)."""
    root = Path(folder)
    if not (root / MANIFEST).is_file():
        raise VectorsError(f"{root}: no {MANIFEST} (expected one set folder written by 'workbench vectors export')")
    doc = _json(root / MANIFEST)
    files = doc.get("files")
    if not isinstance(files, list) or not files:
        raise VectorsError(f"{root / MANIFEST}: lists no files")
    for entry in files:
        path = root / entry["file"]
        if not path.is_file():
            raise VectorsError(f"{path}: listed in {root / MANIFEST} but missing")
        got = sha256(path)
        if got != entry["sha256"]:
            raise VectorsError(f"{path} was changed after export: its SHA-256 is {got}, the manifest says "
                               f"{entry['sha256']}; export the vectors again")
    return doc


def load_file(folder: Path, entry: dict[str, Any]) -> dict[str, np.ndarray]:
    """The arrays of one listed ``.npz`` file (no pickles)."""
    with np.load(folder / entry["file"], allow_pickle=False) as z:
        return {k: z[k] for k in z.files}
