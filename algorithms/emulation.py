"""One front end to the emulated GEMMs: the scheme, its unit, its count, and what it decided.

:func:`emulate` runs one emulation (FP8 Ozaki-II, FP8 Ozaki-I, integer Ozaki-II and
Ozaki-I on the INT8 unit, bf16x9/x6/x3) with its count of moduli, slices or products
given as a number, ``"auto"`` (the scheme's automatic count after ADP,
:mod:`algorithms.adp`; native FP64 where the largest count cannot cover the data),
``"min"``, ``"max"`` or ``"auto-N"`` (N fewer than the automatic count), and returns an
:class:`Emulation`: the product (it is an array: ``np.asarray(result)``) with the
decisions that made it - the count used and the automatic one, the fallback, how many
unit GEMMs ran and how many of them the unit did *not* sum exactly.  The sweep of
``experiments/emulation_safety.toml``, the notebook ``emulation_safety`` and
``workbench emulate`` call it.

The automatic counts are the schemes' own (``"auto"``, after ADP, :mod:`algorithms.adp`):
:func:`algorithms.ozaki_fp8.auto_moduli` for FP8 Ozaki-II, :func:`algorithms.adp.slices_needed`
for FP8 Ozaki-I, :func:`algorithms.ozaki.auto_slices` and :func:`algorithms.ozaki.auto_moduli`
for the integer schemes (up to 20 slices of 7 bits and 40 moduli).

bf16xN (Henry et al. 2019) emulates FP32, not FP64: its count is the number of products
(3, 6, 9) and ``"auto"`` is 9; it has no fallback.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.units import UnitSpec

from . import adp
from ._common import as_matrices
from .bf16xn import bf16xn
from .ozaki import INT8_UNIT, MAX_SLICES, Int8Unit, auto_slices, integer_unit, ozaki
from .ozaki import MAX_MODULI as INT_MAX_MODULI
from .ozaki import auto_moduli as int_auto_moduli
from .ozaki_fp8 import MAX_MODULI, auto_moduli, ozaki1_fp8, ozaki2_fp8

#: method -> (what it emulates, what the count counts, smallest count, largest count)
METHODS: dict[str, tuple[str, str, int, int]] = {
    "ozaki2_fp8": ("fp64", "moduli", 2, MAX_MODULI),
    "ozaki1_fp8": ("fp64", "slices", 1, 62 // 4),
    "ozaki2_int8": ("fp64", "moduli", 2, INT_MAX_MODULI),
    "ozaki1_int8": ("fp64", "slices", 1, MAX_SLICES),
    "bf16x9": ("fp32", "products", 3, 9),
    "native": ("fp64", "none", 0, 0),
}
#: the unit each method runs on by default (``workbench emulate`` without ``--unit``)
DEFAULT_UNITS: dict[str, str] = {
    "ozaki2_fp8": "B200:fp8_e4m3:fp32",
    "ozaki1_fp8": "B200:fp8_e4m3:fp32",
    "ozaki2_int8": INT8_UNIT.name,
    "ozaki1_int8": INT8_UNIT.name,
    "bf16x9": "H100:bf16:fp32",
    "native": "",
}
_INT_SLICE_BITS = 7
_FP8_SLICE_BITS = 4


@dataclass
class Emulation:
    """An emulated product and its decisions (``np.asarray(e)`` is the product)."""

    D: np.ndarray
    method: str
    unit: str
    target: str
    count: int | None                     #: the count that ran (None: fallback to native FP64)
    count_auto: int | None                #: the automatic count (None: beyond the largest)
    count_kind: str                       #: "moduli", "slices" or "products"
    fallback: bool = False
    unit_gemms: int = 0
    unit_inexact_gemms: int = 0           #: unit GEMMs whose sum was not the exact integer sum
    unit_max_deviation: float = 0.0
    exponent_span: int = 0                #: the data's largest exponent span (algorithms.adp)
    warnings: list[str] = field(default_factory=list)
    decisions: dict[str, Any] = field(default_factory=dict)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return np.asarray(self.D, dtype=dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.D.shape)

    def summary(self) -> dict[str, Any]:
        """The decisions as plain values (a sweep row, the CLI's report)."""
        return {"method": self.method, "unit": self.unit, "target": self.target, "count_kind": self.count_kind,
                "count": self.count, "count_auto": self.count_auto, "fallback": self.fallback,
                "unit_gemms": self.unit_gemms, "unit_inexact_gemms": self.unit_inexact_gemms,
                "unit_max_deviation": self.unit_max_deviation, "exponent_span": self.exponent_span,
                "warned": bool(self.warnings)}


def _method(method: str) -> str:
    if method in ("bf16x3", "bf16x6"):
        return "bf16x9"
    if method not in METHODS:
        raise ValueError(f"method={method!r}: expected one of {', '.join([*METHODS, 'bf16x3', 'bf16x6'])}")
    return method


def auto_count(method: str, A: np.ndarray, B: np.ndarray, *, scaling: str = "accurate") -> int | None:
    """The automatic count of ``method`` for float64 A, B (None: no count up to the largest
    covers the data's exponent span, so ``"auto"`` falls back to native FP64)."""
    method = _method(method)
    A64, B64, _ = as_matrices(A, B, None)
    lo, hi = METHODS[method][2:]
    span = adp.exponent_span(A64, B64)
    if method == "ozaki2_fp8":
        return auto_moduli(A64, B64, scaling=scaling, span=span)
    if method == "ozaki1_fp8":
        need = adp.slices_needed(span, _FP8_SLICE_BITS)
        return need if need <= hi else None
    if method == "ozaki1_int8":
        return auto_slices(A64, B64, slice_bits=_INT_SLICE_BITS, span=span)
    if method == "ozaki2_int8":
        return int_auto_moduli(A64, B64, span=span)
    if method == "native":
        return 0
    return 9


def resolve_count(method: str, count: int | str, A: np.ndarray, B: np.ndarray, *,
                  scaling: str = "accurate") -> tuple[int | None, int | None]:
    """(count to run or None for the fallback, automatic count) from a count spelling:
    an integer, ``"auto"``, ``"min"``, ``"max"`` or ``"auto-N"`` (the automatic count minus N,
    or the largest minus N where the automatic count does not exist), clipped to the
    method's range."""
    method = _method(method)
    lo, hi = METHODS[method][2:]
    auto = auto_count(method, A, B, scaling=scaling)
    if method == "native":
        return 0, 0
    if isinstance(count, (int, np.integer)) and not isinstance(count, bool):
        n = int(count)
        if method == "bf16x9" and n not in (3, 6, 9):
            raise ValueError(f"count={n}: bf16xN takes 3, 6 or 9 products")
        if not lo <= n <= hi:
            raise ValueError(f"count={n}: {method} takes {METHODS[method][1]} {lo}..{hi}")
        return n, auto
    if not isinstance(count, str):
        raise ValueError(f"count={count!r}: expected an integer, 'auto', 'min', 'max' or 'auto-N'")
    c = count.strip().lower()
    if c == "auto":
        return auto, auto
    if c == "min":
        return lo, auto
    if c == "max":
        return hi, auto
    if c.startswith("auto-") and c[5:].isdigit():
        base = auto if auto is not None else hi
        return max(lo, base - int(c[5:])), auto
    if c.isdigit():
        return resolve_count(method, int(c), A, B, scaling=scaling)
    raise ValueError(f"count={count!r}: expected an integer, 'auto', 'min', 'max' or 'auto-N'")


def _int8_unit(model: UnitSpec | Int8Unit | None) -> Int8Unit:
    return INT8_UNIT if model is None else integer_unit(model)


def emulate(A: np.typing.ArrayLike, B: np.typing.ArrayLike, C: np.typing.ArrayLike | None = None, *,
            model: UnitSpec | Int8Unit | None = None, method: str = "ozaki2_fp8", count: int | str = "auto",
            scaling: str = "accurate", k_chunk: int | None = None, warn: bool = True,
            device: str = "cpu") -> Emulation:
    """``A B + C`` emulated by ``method`` on the unit ``model`` (module doc).

    Parameters
    ----------
    method:
        ``"ozaki2_fp8"`` (default), ``"ozaki1_fp8"``, ``"ozaki2_int8"``, ``"ozaki1_int8"``,
        ``"bf16x9"`` (``"bf16x6"``, ``"bf16x3"`` are bf16x9 with that count), or ``"native"``
        (numpy's float64 product, the baseline).
    model:
        The unit (any spelling :func:`workbench.units.resolve` takes); default
        :data:`DEFAULT_UNITS` of the method (B200 fp8, the INT8 IMMA preset, H100 bf16).
    count:
        Moduli, slices or products: an integer, ``"auto"`` (default), ``"min"``, ``"max"``,
        ``"auto-N"`` (:func:`resolve_count`).
    scaling:
        FP8 Ozaki-II's scaling mode (:func:`algorithms.ozaki2_fp8`).
    k_chunk:
        Largest K per unit GEMM (the schemes' default: the most the output format holds).
    warn:
        Re-issue the schemes' ``RuntimeWarning`` (a unit GEMM that was not exact); they are
        recorded in :attr:`Emulation.warnings` either way.
    """
    if method in ("bf16x3", "bf16x6") and count == "auto":
        count = int(method[-1])
    method = _method(method)
    target, kind, lo, hi = METHODS[method]
    A64, B64, C64 = as_matrices(A, B, C)
    if model is None or method == "native":
        model = DEFAULT_UNITS[method] or "float64 (numpy)"
    mdl: Any = model
    n, auto = resolve_count(method, count, A64, B64, scaling=scaling)
    span = int(adp.exponent_span(A64, B64).max(initial=0))
    dec: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if method == "native":
            D = A64 @ B64 if C64 is None else A64 @ B64 + C64
            mdl = "float64 (numpy)"
        elif n is None:                                # the automatic count does not exist: native FP64
            D = A64 @ B64 if C64 is None else A64 @ B64 + C64
            dec = {"fallback": True, "reason": f"no {kind} count up to {hi} covers the exponent span {span} "
                                               "(algorithms.adp): native FP64 (float64) product returned"}
        elif method == "ozaki2_fp8":
            D, dec = ozaki2_fp8(A64, B64, C64, model=mdl, moduli=n, scaling=scaling, k_chunk=k_chunk,
                                device=device, return_words=True)
        elif method == "ozaki1_fp8":
            D, dec = ozaki1_fp8(A64, B64, C64, model=mdl, slices=n, slice_bits=_FP8_SLICE_BITS,
                                k_chunk=k_chunk, device=device, return_words=True)
        elif method in ("ozaki2_int8", "ozaki1_int8"):
            unit = _int8_unit(mdl)
            mdl = unit.name
            D, words = ozaki(A64, B64, C64, model=unit, scheme="II" if method == "ozaki2_int8" else "I",
                             slices=n, slice_bits=_INT_SLICE_BITS, moduli=n, k_chunk=k_chunk, return_words=True)
            # the INT8 unit refuses any product whose int32 sum could overflow, so every GEMM that ran was exact
            K = A64.shape[1]
            limit = k_chunk or (2**31 - 1) // ((2**_INT_SLICE_BITS - 1) ** 2 if method == "ozaki1_int8" else 128**2)
            per = -(-K // limit)
            issued: Any = words["pairs"] if "pairs" in words else words["moduli"]
            dec = {"unit_gemms": per * len(issued), "unit_inexact_gemms": 0}
        else:
            D, dec = bf16xn(A64, B64, C64, model=mdl, products=n, device=device, return_words=True)
            dec = {"unit_gemms": n}
    msgs = [str(w.message) for w in caught]
    if warn:
        for w in caught:
            warnings.warn(w.message, w.category, stacklevel=2)
    from workbench import units

    unit_label = mdl if isinstance(mdl, str) else units.unit_name(units.resolve(mdl))
    return Emulation(D=np.asarray(D, dtype=np.float64), method=method if method != "bf16x9" else f"bf16x{n}",
                     unit=str(unit_label), target=target, count=None if dec.get("fallback") else n,
                     count_auto=auto, count_kind=kind, fallback=bool(dec.get("fallback", False)),
                     unit_gemms=int(dec.get("unit_gemms", 0)), unit_inexact_gemms=int(dec.get("unit_inexact_gemms", 0)),
                     unit_max_deviation=float(dec.get("unit_max_deviation", 0.0)), exponent_span=span,
                     warnings=msgs, decisions=dec)


def emulate_task(A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None, *, model: Any = None,
                 method: str = "ozaki2_fp8", count: int | str = "auto", scaling: str = "accurate",
                 k_chunk: int | None = None, device: str = "cpu") -> Emulation:
    """:func:`emulate` for a sweep task (``algorithm = "algorithms.emulation:emulate_task"``):
    warnings are recorded in the result, not issued (the metric ``emulation`` reads them)."""
    return emulate(A, B, C, model=model, method=method, count=count, scaling=scaling, k_chunk=k_chunk,
                   warn=False, device=device)


#: "degraded" ends here: componentwise error above it is "wrong" (:func:`classify`)
DEGRADED = 1e-8


def classify(D: np.ndarray, exact: np.ndarray, A: np.ndarray, B: np.ndarray, *, target: str = "fp64",
             unit_inexact_gemms: int = 0) -> dict[str, Any]:
    """Safe / degraded / wrong for a computed product D against the exact one.

    ``eta = max_ij |D - exact|_ij / (|A||B|)_ij`` is the error in units of native GEMM's
    worst-case componentwise bound ``gamma_K |A||B|``: **safe** where ``eta <= K u``
    (u = 2^-53 for an FP64 target, 2^-24 for FP32: as accurate as native GEMM is
    guaranteed to be) and every unit GEMM was exact; **degraded** where ``eta <= 1e-8``
    (FP64 target; ``2^-11`` for FP32); **wrong** above.  Also returns the forward error
    ``max_ij |D - exact|_ij / |exact_ij|`` (0/0 counts as 0) and the thresholds."""
    D, exact = np.asarray(D, dtype=np.float64), np.asarray(exact, dtype=np.float64)
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    K = A.shape[1]
    u = 2.0**-53 if target == "fp64" else 2.0**-24
    degraded = DEGRADED if target == "fp64" else 2.0**-11
    diff = np.abs(D - exact)
    scale = np.abs(A) @ np.abs(B)
    with np.errstate(divide="ignore", invalid="ignore"):
        eta_m = np.where((diff == 0) & (scale == 0), 0.0, diff / scale)
        fwd_m = np.where(diff == 0, 0.0, diff / np.abs(exact))
    eta = float(eta_m.max(initial=0.0))
    fwd = float(fwd_m.max(initial=0.0))
    if eta <= K * u and not unit_inexact_gemms:
        cls = "safe"
    elif eta <= degraded:
        cls = "degraded"
    else:
        cls = "wrong"
    return {"class": cls, "eta": eta, "forward_error": fwd, "safe_threshold": K * u, "degraded_threshold": degraded}
