"""FPRev-style revelation of cuBLAS's fp16 -> fp32 summation tree on a real GPU (issue 40, item 5).

    python benchmarks/fprev_cublas.py OUTDIR

Needs only PyTorch with CUDA and numpy.  For the witness shape (64 x 64 x K, ``torch.mm(a, b,
out_dtype=torch.float32)`` on fp16 data) it feeds, per output column c, A = 1 and a column of
B that holds +2^15 at position i, -2^15 at position j_c and the smallest fp16 subnormal 2^-24
everywhere else (FPRev, Xie et al. USENIX ATC'25): the two large products cancel where the
tree first joins i and j, every small term added below that node is absorbed (2^15 against at
most K * 2^-24), so output / 2^-24 = K - |leaves under LCA(i, j)|.  Writes ``fprev_K.npz``
with ``i`` (the fixed positions), and ``count[i_index, j]`` (uint16; j = i gives K - 1 terms
cancelled with nothing: stored as is).
"""
import sys
import time
from pathlib import Path

import numpy as np
import torch

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
dev = "cuda"
N = 64
BIG, SMALL = 2.0 ** 15, 2.0 ** -24
PLAN = {8192: list(range(16)) + list(range(16, 8192, 16)), 1024: list(range(0, 1024, 16)),
        2048: list(range(0, 2048, 16)), 4096: list(range(0, 4096, 64)), 16384: list(range(0, 16384, 256)),
        256: list(range(0, 256, 4)), 64: list(range(64)), 32: list(range(32)), 16: list(range(16))}


def counts_for(a: torch.Tensor, K: int, i: int) -> np.ndarray:
    """K - |leaves under LCA(i, j)| for every j, 64 columns (one j each) per product."""
    row = np.zeros(K, dtype=np.uint16)
    for j0 in range(0, K, N):
        js = torch.arange(j0, min(j0 + N, K), device=dev)
        b = torch.full((K, N), SMALL, dtype=torch.float16, device=dev)
        b[i, :] = BIG
        cols = torch.arange(len(js), device=dev)
        b[js, cols] = -BIG
        b[i, cols[js == i]] = 0.0  # j == i: the pair is one position; leave it out
        c = torch.mm(a, b, out_dtype=torch.float32)
        row[j0 : j0 + len(js)] = np.rint(c[0, : len(js)].double().cpu().numpy() / SMALL).astype(np.uint16)
    return row


for K, ivals in PLAN.items():
    t0 = time.time()
    a = torch.ones((N, K), dtype=torch.float16, device=dev)
    counts = np.stack([counts_for(a, K, i) for i in ivals])
    again = counts_for(a, K, ivals[0])  # determinism: the first fixed position again
    np.savez_compressed(out / f"fprev_{K}.npz", i=np.array(ivals), count=counts, again=again)
    print(f"K={K}: {len(ivals)} fixed positions in {time.time() - t0:.1f} s; rerun identical: {bool((again == counts[0]).all())}",
          flush=True)
print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name())
