"""The last steps of every product: what happens to D after the unit's arithmetic.

One home for finishing an output (issue 50), in the order a library applies them:

1. the epilogue ``fl(fl(alpha P) + fl(beta C))`` when C was not given to the unit
   (cuBLAS-style: ordinary cores, round to nearest even, fp32 for fp16/bf16 outputs);
2. a schedule's conversion of the accumulator to a narrower output (``Schedule.output``);
3. the array in the output format's numpy dtype, NaN results in NVIDIA's canonical
   encodings (0x7FFFFFFF, 0x7FFF) unless the unit propagates NaN payloads.

The unit's own rule for the sign of zero outputs is part of its arithmetic, not of this
module: the engine applies it (:meth:`~workbench.engine.model.Operation.finish`)."""
from __future__ import annotations

import numpy as np

from ..engine.model import Model
from ..numbers import formats as _formats

#: NVIDIA's canonical NaN, by output dtype: (unsigned view, bits).
NAN_BITS = {np.dtype(np.float32): (np.uint32, 0x7FFFFFFF), np.dtype(np.float16): (np.uint16, 0x7FFF)}


def epilogue(D: np.ndarray, C: np.ndarray, alpha: float, beta: float, fout: _formats.FloatFormat) -> np.ndarray:
    """D = fl(fl(alpha P) + fl(beta C)) on ordinary cores in the output's precision (fp32
    for fp16/bf16 outputs), round to nearest even (cuBLAS-style)."""
    ep = _formats.format("fp32") if fout.name in ("fp16", "bf16") else fout
    P = _formats.round(float(alpha) * D, ep, "rne") if alpha != 1 else D
    Q = _formats.round(float(beta) * C, ep, "rne")
    return _formats.round(P + Q, fout, "rne")


def in_dtype(D: np.ndarray, fout: _formats.FloatFormat, model: Model) -> np.ndarray:
    """D (float64, values in ``fout``) in ``fout``'s numpy dtype, NaN results in NVIDIA's
    canonical encodings unless the unit propagates NaN payloads."""
    dt = fout.numpy_dtype
    if dt is None:
        return D
    out = D.astype(dt)
    if dt in NAN_BITS and not model.propagates_nan:
        ut, bits = NAN_BITS[dt]
        nan = np.isnan(out)
        if nan.any():
            out.view(ut)[nan] = bits
    return out


def finish(D: np.ndarray, model: Model, *, C: np.ndarray | None = None, alpha: float = 1.0, beta: float = 0.0,
           output: str | None = None, output_rounding: str = "rne") -> np.ndarray:
    """The product's output from the unit's D (float64, values in the unit's output
    format): :func:`epilogue` with ``C`` when given (C not consumed by the unit), then the
    conversion to ``output`` with ``output_rounding`` (a schedule's narrower output), then
    :func:`in_dtype`."""
    fout = model.out_fmt
    if C is not None:
        D = epilogue(D, C, alpha, beta, fout)
    if output is not None:
        fout = _formats.format(output)
        D = _formats.round(D, fout, output_rounding)
    return in_dtype(D, fout, model)


__all__ = ["NAN_BITS", "epilogue", "in_dtype", "finish"]
