"""Helpers shared by the algorithm modules: validation, splitting, product chains.

Every algorithm issues its word products to the simulated matrix unit through
:func:`workbench.gemm` only.  A sequence of products accumulated in the unit's
accumulator (``D <- X_1 Y_1 + D``, ``D <- X_2 Y_2 + D``, ...) is issued as *one*
``gemm`` call on operands concatenated along K (:func:`chain`), which is bit-for-bit
the same as the separate chained calls (each segment is zero-padded to a multiple of
the unit's block size ``L``, so no block mixes two products) and decomposes the
operands once.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from workbench.numbers import formats
from workbench.matmul import product as matmul
from workbench import units
from workbench.engine.model import Model
from workbench.numbers.validation import real_matrix

#: Term orders of a product chain (see :func:`chain`).
ORDERS = ("sequential", "interleaved")


def as_matrices(A: np.typing.ArrayLike, B: np.typing.ArrayLike, C: np.typing.ArrayLike | None,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A, B (and C) as finite float64 2-D arrays with matching shapes (through
    :func:`workbench.numbers.validation.real_matrix`: exact values only), else TypeError/ValueError."""
    A64 = real_matrix(A, "A", finite=True)
    B64 = real_matrix(B, "B", finite=True)
    C64 = None if C is None else real_matrix(C, "C", finite=True)
    if A64.shape[1] != B64.shape[0]:
        raise ValueError(f"A is {A64.shape[0]}x{A64.shape[1]} and B is {B64.shape[0]}x{B64.shape[1]}: "
                         "the number of columns of A must equal the number of rows of B")
    if C64 is not None and C64.shape != (A64.shape[0], B64.shape[1]):
        raise ValueError(f"C has shape {C64.shape}; A @ B has shape {(A64.shape[0], B64.shape[1])}")
    return A64, B64, C64


def resolve_unit(model: object, algorithm: str) -> Model:
    """The unit ``model`` names (:func:`workbench.units.resolve`: a Model, a catalogue
    name, ``DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]]`` or a unit file); a ValueError naming
    ``algorithm`` otherwise."""
    try:
        return units.resolve(model)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"{algorithm}: model={model!r}: expected {units.FORMS}; got {type(model).__name__}") from None
    except ValueError as exc:
        raise ValueError(f"{algorithm}: {exc}") from None


def check_model(model: object, algorithm: str) -> Model:
    """The unit ``model`` names (:func:`resolve_unit`), which must write binary32 (the
    algorithms accumulate in binary32)."""
    model = resolve_unit(model, algorithm)
    if formats.format(model.out_format).name != "fp32":
        raise ValueError(f"{algorithm}: the algorithm accumulates in binary32 but the preset's output format is "
                         f"{model.out_format}; choose the preset with out_format='fp32'")
    return model


def holds(unit: formats.FloatFormat, word: formats.FloatFormat) -> bool:
    """Whether every value of ``word`` is a value of ``unit``: no more precision, no
    larger finite value, and every non-zero magnitude on ``unit``'s grid (its smallest
    spacing, or its smallest normal where it has no subnormals)."""
    if word.p > unit.p or word.max > unit.max:
        return False
    word_ulp = word.emin - (word.p - 1)               # exponent of the word's finest spacing
    if unit.subnormals:
        return word_ulp >= unit.emin - (unit.p - 1)
    return (word_ulp if word.subnormals else word.emin) >= unit.emin


def resolve_word_format(model: Model, fmt: str | formats.FloatFormat | None, algorithm: str, *,
                        keyword: str = "word_format") -> formats.FloatFormat:
    """The format of an algorithm's words on ``model``: ``fmt`` or, for None, the unit's
    own input format (the splits of Markidis et al. 2018, Ootomo & Yokota 2022, Henry et
    al. 2019, CUTLASS and Fasi et al. 2023 round to the format the unit reads).

    The words carry signs, so the format must be signed; a format other than the
    unit's must be held by it (:func:`holds`), else a ValueError names both formats
    (``keyword`` is the argument the caller fixed the word format with).
    """
    unit = formats.format(model.in_format)
    try:
        wf = formats.format(fmt if fmt is not None else model.in_format)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{algorithm}: {keyword}={fmt!r}: {exc}") from None
    if not wf.signed:
        what = f"the unit's input format {wf.name}" if fmt is None else f"{keyword}={wf.name!r}"
        raise ValueError(f"{algorithm}: {what} is unsigned; words of a split carry signs, so they need a "
                         "signed format")
    if wf.name != unit.name and not holds(unit, wf):
        raise ValueError(f"{algorithm}: {wf.name} words are not all representable in the preset's input format "
                         f"{unit.name}; choose a preset with in_format={wf.name!r}, or leave {keyword} at its "
                         f"default (None: words in the unit's own format, {unit.name})")
    return wf


def to_fp32(X: np.ndarray) -> np.ndarray:
    """The fp32 value of each entry (RNE cast), as float64: the input of an SGEMM emulation."""
    return X.astype(np.float32).astype(np.float64)


def split(X: np.ndarray, fmt: str | formats.FloatFormat, words: int, *, mode: str = "rne", scale: float = 1.0,
          name: str = "A") -> list[np.ndarray]:
    """``words`` words of ``fmt``: w_1 = fl(X), w_j = fl((X - sum_{i<j} w_i s^(i-1)) / s^(j-1)).

    ``s = 1 / scale`` (``scale = 2^p`` of ``fmt`` is Ootomo-Yokota's residual scaling,
    2^11 for fp16; 1 is Markidis' unscaled residual); residuals are formed in float64,
    exactly for the formats used here (each word is a rounding of the current residual).

    A word that would overflow ``fmt`` (|X| above its largest value, e.g. fp32 data
    above 65504 split into fp16 words, or a scaled residual past the range when very
    many words are asked for) is refused with a ValueError naming ``name``, the
    entry, the word and the limit, instead of carrying Inf/NaN into the product.
    """
    f = formats.format(fmt)
    out = []
    r = X
    factor = 1.0
    scaled = np.empty_like(X, dtype=np.float64)   # one scratch array and one residual, reused word by word
    residual = np.empty_like(scaled)
    for j in range(words):
        with np.errstate(over="ignore", invalid="ignore"):
            np.multiply(r, factor, out=scaled)
            if not np.isfinite(factor):
                scaled[r == 0] = 0.0      # 0 * inf: 0
            scaled += 0.0                 # a zero residual is +0, whatever its sign
            w = formats.round(scaled, f, mode)
        if w.size and not (np.isfinite(w.max()) and np.isfinite(w.min())):   # (max and min: no mask array)
            i = tuple(int(t) for t in np.argwhere(~np.isfinite(w))[0])
            raise ValueError(
                f"{name}[{', '.join(map(str, i))}] = {float(X[i])!r}: word {j + 1} of its split, "
                f"{float(r[i] * factor)!r}, overflows {f.name} (largest value {f.max!r}); the split "
                f"needs |{name}| <= {f.max / (1 if j == 0 else factor):.6g}. Scale the data by a power of two "
                "(the product scales by the same factor), or use a unit whose input format has a wider range "
                "(bf16, tf32)")
        out.append(w)
        if j + 1 < words:                 # the last residual is not needed
            np.divide(w, factor, out=scaled)
            r = np.subtract(r, scaled, out=residual)
            factor *= scale
    return out


def unit_gemm(X: np.ndarray, Y: np.ndarray, C: np.ndarray | None, *, model: Model, **kw: object) -> np.ndarray:
    """``workbench.gemm(X, Y, C, model=model, **kw)``; a block-scaled unit (MX, NVFP4:
    :attr:`~workbench.engine.model.Operation.scaled`) gets scale factors of 1 (2^0 in
    E8M0 and UE4M3 alike), so that the words reach it as they are: the algorithms
    scale their words themselves."""
    if model.operation.scaled:
        nb = -(-X.shape[1] // int(model.k_block or 1))
        kw = {**kw, "scale_a": np.ones((X.shape[0], nb)), "scale_b": np.ones((nb, Y.shape[1]))}
    return matmul.gemm(X, Y, C, model=model, **kw)  # type: ignore[arg-type]  # keywords of gemm, passed on


def chain(model: Model, pairs: Iterable[tuple[np.ndarray, np.ndarray]], C: np.ndarray | None = None, *,
          order: str = "sequential", input_rounding: str | None = None, device: str = "cpu") -> np.ndarray:
    """The unit's accumulation of ``sum_l X_l @ Y_l + C`` over ``pairs``, in the given term order.

    ``order="sequential"``: product 1 over the whole of K (chained block by block as
    the unit does), then product 2 with that result as its accumulator input, and
    so on (separate GEMM calls sharing the accumulator).  ``order="interleaved"``:
    for each block of the unit's columns (``model.operation.block_size``: L; P for FTZ-AddMul), the products in turn (a WMMA/MMA kernel
    that issues all products of one k-tile before moving on).  C (fp32 values) is
    the accumulator input of the first block; result as float64 holding fp32 values.
    ``input_rounding`` is passed to :func:`workbench.gemm` (how the unit converts
    words wider than its input format; ``None``: they must be representable);
    ``device`` says where those calls run (``"cpu"`` or ``"cuda"``).  ``pairs`` may be
    a generator: the sequential order takes one pair at a time, so only one is in memory.
    """
    if order not in ORDERS:
        raise ValueError(f"order={order!r}: expected one of {ORDERS}")
    if order == "sequential":  # one GEMM per product, its result the next one's accumulator input: the
        D = C                  # chain of one call over the block-padded products concatenated along K,
        for X, Y in pairs:     # in the memory of one product (a 6-word product at K = 10^6 needs 21x less)
            D = unit_gemm(X, Y, D, model=model, input_rounding=input_rounding, device=device)
        return np.asarray(D, dtype=np.float64)
    pairs = list(pairs)
    M, K = pairs[0][0].shape
    N = pairs[0][1].shape[1]
    L = model.operation.block_size(model)
    nb = -(-K // L)
    Kp = nb * L
    P = len(pairs)
    Xs = np.zeros((P, M, Kp))
    Ys = np.zeros((P, Kp, N))
    for idx, (X, Y) in enumerate(pairs):
        Xs[idx, :, :K] = X
        Ys[idx, :K, :] = Y
    Abig = Xs.reshape(P, M, nb, L).transpose(1, 2, 0, 3).reshape(M, P * Kp)
    Bbig = Ys.reshape(P, nb, L, N).transpose(1, 0, 2, 3).reshape(P * Kp, N)
    D = unit_gemm(Abig, Bbig, C, model=model, input_rounding=input_rounding, device=device)
    return D.astype(np.float64)


def fp32_add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """fl32(x + y) with round-to-nearest-even (an FADD on the ordinary cores)."""
    return formats.round(x + y, "fp32", "rne")
