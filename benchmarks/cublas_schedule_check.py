"""Fresh products for the cuBLAS schedule predictions (issue 40, item 5): run on a GPU.

    python benchmarks/cublas_schedule_check.py OUTDIR

Needs only PyTorch with CUDA and numpy.  For each shape (M, N, K) it draws fp16 A and B
(standard normal, ``numpy.random.default_rng(K + M)``) and stores the CRC-32 of their bytes
with the bits of ``torch.mm(a, b, out_dtype=torch.float32)`` and ``torch.mm(a, b)`` (fp16) in
``check.npz`` (recorded: ``benchmarks/measured/cublas_h100_schedule_check.npz``, H100,
PyTorch 2.11.0+cu130, 2026-11-28; ``tests/test_schedules.py`` checks the cuBLAS schedules on it); and, for the K
values listed in FPREV, the first row of FPRev's counts (fixed position i = 0, 64 x 64 x K;
encoding as ``benchmarks/fprev_cublas.py``) as ``fprev_row_K``.
"""
import sys
import zlib
from pathlib import Path

import numpy as np
import torch

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
SHAPES = [(64, 64, 8192), (64, 64, 4096), (64, 64, 16384), (64, 64, 3072), (64, 64, 6144), (64, 64, 12288),
          (64, 64, 2560), (33, 65, 8192), (128, 128, 8192), (256, 256, 8192)]
FPREV = [2560, 3072, 6144, 12288]
res = {}
for M, N, K in SHAPES:
    rng = np.random.default_rng(K + M)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    a, b = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
    key = f"{M}x{N}x{K}"
    res[key + "__crc"] = np.array([zlib.crc32(A.tobytes()), zlib.crc32(B.tobytes())], dtype=np.uint64)
    res[key + "__mm_fp32"] = torch.mm(a, b, out_dtype=torch.float32).cpu().numpy().view(np.uint32)
    res[key + "__mm"] = torch.mm(a, b).cpu().numpy().view(np.uint16)
BIG, SMALL = 2.0 ** 15, 2.0 ** -24
for K in FPREV:
    ones = torch.ones((64, K), dtype=torch.float16, device="cuda")
    row = np.zeros(K, dtype=np.uint16)
    for j0 in range(0, K, 64):
        js = torch.arange(j0, min(j0 + 64, K), device="cuda")
        bb = torch.full((K, 64), SMALL, dtype=torch.float16, device="cuda")
        bb[0, :] = BIG
        cols = torch.arange(len(js), device="cuda")
        bb[js, cols] = -BIG
        bb[0, cols[js == 0]] = 0.0
        r = torch.mm(ones, bb, out_dtype=torch.float32)[0, : len(js)].double().cpu().numpy() / SMALL
        row[j0: j0 + len(js)] = np.rint(r).astype(np.uint16)
    res[f"fprev_row_{K}"] = row
np.savez_compressed(out / "check.npz", **res)
print(torch.__version__, np.__version__, torch.cuda.get_device_name(), "done")
