"""Pack the output of ``measure.py`` into the stored witness file (README.md beside this file).

    python tests/data/gpu_witness/pack.py OUTDIR GPU [--outputs-only]

Keeps of each 64 x 64 product the leading 16 x 16 block (K <= 256) or 8 x 8 block (K >= 1024):
the rows of A and the columns of B that produce it, that block of C and of each call's output
(an output depends only on its row of A and its column of B, so the slices are exact), and
writes ``GPU_cublas.npz`` (keys ``FORMAT__KIND__KK__a|b|c|CALL``) and ``meta_GPU.json`` beside
this file.  bf16 at K = 8192 is left out, as in the first (H100) file.

``--outputs-only`` stores the outputs and, in place of the input slices, their CRC-32s
(``inputs__keys``, ``inputs__crc32``): for a second GPU measured on the same inputs (measure.py
draws them from fixed seeds), whose inputs the first file already holds.
"""
from __future__ import annotations

import argparse
import json
import sys
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
SMALL_K = 256          #: up to this K the 16 x 16 block is kept, above it the 8 x 8 one
LEFT_OUT = ("bf16", "normal", 8192)


def slices(outdir: Path) -> dict[str, np.ndarray]:
    """The stored slices of every product in measure.py's OUTDIR."""
    packed: dict[str, np.ndarray] = {}
    for path in sorted(outdir.glob("*.npz")):
        fmt = path.stem
        data = np.load(path)
        for key in data.files:
            kind, kk, what = key.split("__")
            K = int(kk[1:])
            if (fmt, kind, K) == LEFT_OUT:
                continue
            n = 16 if K <= SMALL_K else 8
            arr = data[key]
            part = arr[:n, :] if what == "a" else arr[:, :n] if what == "b" else arr[:n, :n]
            packed[f"{fmt}__{key}"] = np.ascontiguousarray(part)
    return packed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir", type=Path, help="the folder measure.py wrote")
    p.add_argument("gpu", help="name of the GPU in the file names, e.g. H100")
    p.add_argument("--outputs-only", action="store_true")
    args = p.parse_args()
    packed = slices(args.outdir)
    if args.outputs_only:
        inputs = sorted(k for k in packed if k.split("__")[-1] in ("a", "b", "c"))
        crcs = np.array([zlib.crc32(packed[k].tobytes()) for k in inputs], dtype=np.uint32)
        packed = {k: v for k, v in packed.items() if k not in inputs}
        packed["inputs__keys"] = np.array(inputs)
        packed["inputs__crc32"] = crcs
    np.savez_compressed(HERE / f"{args.gpu}_cublas.npz", **packed)
    meta = json.loads((args.outdir / "meta.json").read_text())
    meta["stored"] = ("the leading 16x16 block (K <= 256) or 8x8 block (K >= 1024) of each 64x64 product"
                      + (": D only, with the CRC-32 of each slice of A, B and C" if args.outputs_only
                         else ": rows of A, columns of B, C and D") + "; bf16 K = 8192 not stored")
    (HERE / f"meta_{args.gpu}.json").write_text(json.dumps(meta, indent=1))
    print(f"{len(packed)} arrays -> {HERE / f'{args.gpu}_cublas.npz'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
