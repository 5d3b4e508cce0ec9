"""Multi-word matrix multiplication with narrow-range words.

M. Fasi, N. J. Higham, F. Lopez, T. Mary, M. Mikaitis, "Matrix multiplication in
multiword arithmetic: error analysis and application to GPU tensor cores", SIAM J.
Sci. Comput. 45(1), 2023; T. Mary, M. Mikaitis, "Error analysis of matrix
multiplication with narrow range floating-point arithmetic" (hal-04671474, 2024/25),
Section 4; the experiment of Khattak & Mikaitis (2025), Figure 7, defined exactly in
``paper_data/khattak2025_fig7/README.md`` (``experiments/matmul_test.m`` and
``models/tools/GEMM.m`` of the MATLAB Tensor Core toolbox):

1. scaling: theta = min(f_max, sqrt(F_max / n)); row scales
   L_i = 2^floor(log2(theta / max_j |A_ij|)), column scales
   M_j = 2^floor(log2(theta / max_i |B_ij|)); A' = diag(L) A, B' = B diag(M);
2. splitting: A_1 = fl(A'), A_j = fl(r_{j-1} / u^(j-1)), r_j = r_{j-1} - u^(j-1) A_j
   (u = 2^-t of the word format; fl = round to nearest even by default, as the
   algorithm is published; ``split_rounding="rz"`` truncates instead, which is what
   the MATLAB run behind Figure 7 actually did, see below);
3. products (j, k) with j + k <= p + 1 in the loop order (1,1),(1,2),...,(2,1),...:
   C' <- alpha A_j B_k + C' with alpha = u^(j+k-2) multiplied into A_j and rounded to
   the unit's input format (as GEMM.m does), accumulated in the unit;
4. unscaling in float64: C = diag(1/L) C' diag(1/M).

Rounding of the split in the published run.  ``matmul_test.m`` rounds the words with
``cpfloat(X, inopt)`` where ``inopt`` sets only ``format``.  CPFloat keeps every option
not given in persistent memory ("take the default value on the first invocation of
CPFLOAT, and keep their previous values on subsequent calls", ``cpfloat.m``), and the
tensor-core models' ``GEMM.m`` round C with ``round = 4`` (toward zero) on every call.
So after the first model call of ``experiments.m`` every split was round-toward-zero,
not round-to-nearest: every point of Figure 7 except the very first one (V100, p = 1,
n = 10, drawn before any model call; the same matrices give 2.5e-5 there on V100 and
1.3e-4 on A100/B200, whose split was truncated).  Truncation doubles the word's
relative error (2u instead of u) and makes the residuals one-signed, so the p-word
representation error grows by about 2^p: with RNE our p = 1 errors came out 2-3x and
the fp8 p = 4/6 errors on B200 15-60x below the paper's.  ``split_rounding="rz"``
reproduces the published curves; the default stays RNE (the algorithm of Mary &
Mikaitis and the toolbox README).  The ``alpha * A_j`` rounding inside GEMM.m sets
``round = 1`` explicitly and so stays RNE in both cases.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from workbench.numbers import formats
from workbench.units import UnitSpec

from ._common import ORDERS, as_matrices, chain, check_model, resolve_word_format, split, unit_gemm

PRODUCTS = ("triangle", "all")
ALPHA_PLACEMENTS = ("input", "after")
SPLIT_ROUNDINGS = ("rne", "rz")


def _scales(X: np.ndarray, theta: float, axis: int) -> np.ndarray:
    """Powers of two 2^floor(log2(theta / max|X|)) along ``axis`` (1 for all-zero lines)."""
    mx = np.max(np.abs(X), axis=axis, initial=0.0)
    e = np.zeros(mx.shape)
    nz = mx > 0
    e[nz] = np.floor(np.log2(theta / mx[nz]))
    return np.ldexp(1.0, e.astype(np.int64))


def multiword(A: np.typing.ArrayLike, B: np.typing.ArrayLike, C: np.typing.ArrayLike | None = None, *,
              model: UnitSpec, words: int = 2, word_format: str | formats.FloatFormat | None = None, products: str = "triangle",
              alpha_placement: str = "input", scaling: bool = True, order: str = "sequential",
              split_rounding: str = "rne", return_words: bool = False,
              input_rounding: str | None = None, device: str = "cpu") -> np.ndarray | tuple[np.ndarray, dict[str, object]]:
    """A B (+ C) from ``words``-word splittings of A and B, products in the matrix unit.

    Parameters
    ----------
    A, B:
        float32/float64 data (split in float64).
    C:
        Optional; added to the unscaled product in float64 (the paper's experiment
        has no C).
    model:
        A preset with fp32 output whose input format holds the words (the unit's
        input format by default).
    words:
        Number of words p >= 1.
    word_format:
        The format of the words: a name (fp16, bf16, fp8_e4m3, fp8_e5m2, the FNUZ fp8
        of CDNA3, any registered format) or a :class:`~workbench.numbers.formats.FloatFormat`
        object (``FloatFormat.custom(...)``); ``None`` = the unit's input format.  A
        word format different from the unit's must be signed and exactly representable
        in it (no wider precision or range, no smaller subnormals).
    products:
        ``"triangle"`` (default): the p(p+1)/2 products with j + k <= p + 1;
        ``"all"``: all p^2 products (same loop order).
    alpha_placement:
        ``"input"`` (default, GEMM.m): alpha = u^(j+k-2) multiplied into A_j and
        rounded (RNE, with subnormals) to the unit's input format, every product
        chained in the unit's accumulator.  ``"after"``: each A_j B_k computed by
        the unit from a zero accumulator, multiplied by alpha and summed in float64.
    scaling:
        True (default): the power-of-two row/column scaling of step 1; False: none.
    split_rounding:
        Rounding of the splitting step 2 (``fl``): ``"rne"`` (default, round to
        nearest even, the published algorithm) or ``"rz"`` (round toward zero: what
        the MATLAB run behind Khattak & Mikaitis' Figure 7 did, through CPFloat's
        persistent rounding mode; see the module docstring).
    order:
        Term order of the in-unit chain (``"sequential"``: one product over all of K
        after the other, as the toolbox's successive model calls; or
        ``"interleaved"``), see :func:`algorithms._common.chain`.
    input_rounding:
        Passed to the unit's :func:`workbench.gemm` calls: how it converts operands
        wider than its input format (``None``, the default: they must be
        representable; ``"rz"``, ``"rne"``, ``"rna"``: see the preset's
        ``wider_inputs``).  With ``alpha_placement="input"`` the alpha-scaled words
        go to the unit as they are and it converts them in this mode; ``None``
        rounds them to nearest even first, as GEMM.m does.
    device:
        Where the unit's :func:`workbench.gemm` calls run: ``"cpu"`` (default) or
        ``"cuda"`` (the same bits on an NVIDIA GPU; :mod:`workbench.engine.gpu`).
    return_words:
        Also return ``{"A": [A_1..A_p], "B": [B_1..B_p], "row_scale": L,
        "col_scale": M, "pairs": [(j, k), ...], "theta": theta}``.

    Returns
    -------
    float64 array, or ``(D, words)``.
    """
    A64, B64, C64 = as_matrices(A, B, C)
    model = check_model(model, "multiword")
    unit_fmt = formats.format(model.in_format)
    wf = resolve_word_format(model, word_format, "multiword")
    if not isinstance(words, (int, np.integer)) or words < 1:
        raise ValueError(f"words={words!r}: expected a positive integer number of words")
    if products not in PRODUCTS:
        raise ValueError(f"products={products!r}: expected one of {PRODUCTS}")
    if alpha_placement not in ALPHA_PLACEMENTS:
        raise ValueError(f"alpha_placement={alpha_placement!r}: expected one of {ALPHA_PLACEMENTS}")
    if split_rounding not in SPLIT_ROUNDINGS:
        raise ValueError(f"split_rounding={split_rounding!r}: expected one of {SPLIT_ROUNDINGS}")
    if order not in ORDERS:
        raise ValueError(f"order={order!r}: expected one of {ORDERS}")
    p = int(words)
    n = A64.shape[1]
    u = 2.0 ** -wf.p
    out = formats.format(model.out_format)
    theta = min(wf.max, float(np.sqrt(out.max / max(n, 1))))
    if scaling:
        Ls = _scales(A64, theta, axis=1)
        Ms = _scales(B64, theta, axis=0)
    else:
        Ls = np.ones(A64.shape[0])
        Ms = np.ones(B64.shape[1])
    Aw = split(A64 * Ls[:, None], wf, p, mode=split_rounding, scale=1.0 / u, name="A")
    Bw = split(B64 * Ms[None, :], wf, p, mode=split_rounding, scale=1.0 / u, name="B")
    idx = [(j, k) for j in range(1, p + 1) for k in range(1, p + 1) if products == "all" or j + k <= p + 1]
    if alpha_placement == "input":
        def scaled_pairs() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            """(alpha A_j, B_k) one at a time: a 6-word product at K = 10^6 holds one, not 21."""
            for j, k in idx:
                X = u ** (j + k - 2) * Aw[j - 1]   # exact in float64
                if input_rounding is None:         # GEMM.m rounds the alpha-scaled words itself, to nearest even
                    X = formats.round(X, unit_fmt, "rne")
                yield X, Bw[k - 1]

        Cs = chain(model, scaled_pairs(), order=order, input_rounding=input_rounding, device=device)
    else:
        Cs = np.zeros((A64.shape[0], B64.shape[1]))
        for j, k in idx:
            Cs = Cs + u ** (j + k - 2) * unit_gemm(Aw[j - 1], Bw[k - 1], None, model=model,
                                                            input_rounding=input_rounding, device=device).astype(np.float64)
    D = Cs / Ls[:, None] / Ms[None, :]
    if C64 is not None:
        D = D + C64
    if return_words:
        return D, {"A": Aw, "B": Bw, "row_scale": Ls, "col_scale": Ms, "pairs": idx, "theta": theta}
    return D
