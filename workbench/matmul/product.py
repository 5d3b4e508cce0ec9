"""``workbench.gemm``: a whole matrix product on a simulated matrix unit, as a sequence of
steps (:func:`_checked_gemm`): inputs converted or checked, the schedule's parts
prepared, C, alpha, beta and the scale factors checked, the parts run and combined
(:mod:`workbench.matmul.schedule_run`), the epilogue, the final conversion, the output.

(The module is not called ``gemm`` so that importing it does not shadow the function
``workbench.gemm``.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Mapping, cast

import numpy as np

from ..numbers import formats as _formats
from ..units import schedules as _schedules
from ..engine import core as _core
from ..engine import gpu as _gpu
from ..engine.explain import Trace
from ..engine.explain import explain as _explain
from ..engine.model import Model
from ..numbers.validation import real_matrix
from . import output as _output
from . import schedule_run as _schedule_run
from ..units import UnitSpec, resolve as _resolve_unit

__all__ = ["gemm", "explain", "INPUT_ROUNDINGS"]

#: How :func:`gemm` converts A and B that are wider than the unit's input format
#: (``input_rounding``): the conversion a unit or library applies to wider data.
INPUT_ROUNDINGS: dict[str, str] = {
    "rz": "round toward zero: a tf32 unit fed fp32 registers ignores their low 13 significand bits "
          "(Fasi et al. 2021, A100 tf32 tests)",
    "rne": "round to nearest, ties to even: cvt.rn.f16.f32 / cvt.rn.bf16.f32 (PTX ISA, cvt), numpy/torch casts",
    "rna": "round to nearest, ties away from zero: cvt.rna.tf32.f32 (PTX ISA, cvt), which cuBLAS and CUTLASS "
           "use to make tf32 operands",
}

def gemm(A: np.typing.ArrayLike, B: np.typing.ArrayLike, C: np.typing.ArrayLike | None = None, *,
         model: UnitSpec, alpha: float = 1.0, beta: float = 1.0, accumulation: str = "chain",
         promote_every: int | None = None, scale_a: np.typing.ArrayLike | None = None,
         scale_b: np.typing.ArrayLike | None = None, input_rounding: str | None = None,
         device: str = "cpu", schedule: _schedules.Schedule | str | Mapping[str, Any] | None = None) -> np.ndarray:
    """D = alpha * A @ B + beta * C as the modelled matrix unit computes it, bit for bit.

    Parameters
    ----------
    A, B:
        (M, K) and (K, N) arrays whose values are representable in
        ``model.in_format`` (a ValueError names the first value that is not).
    C:
        (M, N) array representable in ``model.out_format``; ``None`` means zeros.
    model:
        The unit: a :class:`~workbench.engine.Model` - a preset from
        :func:`workbench.preset` or :func:`workbench.custom_model` - or any name
        :func:`workbench.units.resolve` reads: ``"H100:fp16:fp32"``
        (``DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]]``), a catalogue name such as
        ``"cdna3/mfma/fp16->fp32"``, or the path of a unit file (``.toml``).
    alpha, beta:
        With ``alpha == 1`` and ``beta`` in {0, 1} nothing leaves the unit: C (or 0)
        is the accumulator input of the first block, as a GEMM kernel that keeps its
        accumulator in the matrix unit does.  Otherwise the unit computes P = A @ B
        from a zero accumulator and the epilogue runs on ordinary cores in the
        output's precision with round-to-nearest-even: D = fl(fl(alpha * P) +
        fl(beta * C)) (cuBLAS-style; Khattak-Mikaitis' GEMM.m instead pre-scales the
        inputs).
    accumulation:
        ``"chain"`` (default): K is consumed in blocks of ``model.L``, zero-padded at
        the end, each block's result feeding the next as c (Xie et al. Algorithm 5).
        ``"outside"``: every block starts from c = 0 and its result is added to an
        fp32 accumulator (initially C) with round-to-nearest on ordinary cores.
        ``"promote"``: chains of ``promote_every`` elements (a multiple of L) start
        from c = 0 and are added to the fp32 accumulator with round-to-nearest
        (DeepSeek-V3's fp8 recipe promotes every 128 elements).  With fp16 output
        the fp32 accumulator is rounded to fp16 (RNE) at the end.  Each option is
        the one-part :class:`~workbench.units.schedules.Schedule` of
        :func:`~workbench.units.schedules.from_accumulation`.  Every kind of unit takes
        all three: the T-FDPA and ST-FDPA kernels keep the fp32 accumulator in
        registers, the other kinds (AMD units, FMA chains, GST-FDPA, operations you
        register) run the same arithmetic as chains of parts of one block (or of
        ``promote_every`` elements) added in order in fp32 (a part wider than fp32
        is first rounded to it).
    scale_a, scale_b:
        For scaled models (``st-fdpa``/``gst-fdpa``: MX and NVFP4 formats):
        the block scale factors, ``scale_a`` of shape (M, ceil(K / k_block)) and
        ``scale_b`` of shape (ceil(K / k_block), N), values representable in
        ``model.scale_format`` (E8M0 or UE4M3).  Element k of row i of A is scaled by
        ``scale_a[i, k // k_block]``, likewise for B's columns.  For other units
        with ``accumulation="promote"`` (or a schedule whose ``inner`` is
        ``"promote"``): scale factors applied at promotion, DeepSeek-V3's
        fine-grained quantisation (DeepSeek-AI 2024, Section 3.3.2) - of shapes
        (M, ceil(K / promote_every)) and (ceil(K / promote_every), N), finite fp32
        values; each part's fp32 sum is multiplied by fl(scale_a[i, c] * scale_b[c, j])
        and rounded to fp32 before it joins the accumulator.
    input_rounding:
        ``None`` (default): A and B must be representable in ``model.in_format``
        (a ValueError names the first value that is not; nothing is rounded
        silently).  ``"rz"``, ``"rne"`` or ``"rna"`` (:data:`INPUT_ROUNDINGS`): A and
        B are first rounded to ``model.in_format`` in that mode, once, from their
        float64 values, as the hardware or library converts wider data: ``"rz"`` is
        the A100 tf32 unit fed fp32 registers (it ignores their low 13 bits; Fasi
        et al. 2021's A100 tf32 tests reproduce with it), ``"rna"`` cuBLAS'
        ``cvt.rna.tf32.f32``, ``"rne"`` the fp32 -> fp16/bf16/fp8 conversions
        (``cvt.rn``).  Each preset's ``wider_inputs`` says what its hardware does.
        Overflow follows :func:`workbench.round` (``"rz"`` gives the largest
        finite value, the nearest modes Inf, or NaN for fn/fnuz fp8); NaN stays NaN.
        C is not converted: it is the accumulator, already in the output format.
    device:
        Where the unit's arithmetic runs (:data:`workbench.engine.gpu.DEVICES`):
        ``"cpu"`` (default) or ``"cuda"``, the same kernels compiled for an NVIDIA GPU
        with numba-cuda (``pip install 'mixed-precision-workbench[gpu]'``), bit for bit
        the CPU's result.  Not the simulated unit: that is ``model`` (a preset such as
        ``workbench.preset("H100", ...)``).  ``"cuda"`` without a usable GPU raises
        :class:`~workbench.engine.gpu.GPUUnavailableError` (never runs on the CPU
        instead); kinds the GPU kernels do not cover raise NotImplementedError
        (:func:`~workbench.engine.gpu.gpu_kinds`).

    schedule:
        How a library composes the unit into the GEMM
        (:class:`~workbench.units.schedules.Schedule`, the name of one of
        :data:`~workbench.units.schedules.SCHEDULES` such as ``"cublas-h100-fp16-fp32"``, or
        the fields of ``Schedule.to_dict()``): K cut into parts,
        each consumed by the unit as its ``inner`` says (from C for the first part
        where ``c_position="unit"``, else from zero); the parts' results summed
        ``in-order`` or ``pairwise`` in ``combine_format`` with ``combine_rounding``
        (C first where ``c_position="combine"``) and rounded to the unit's output
        format; C added in the epilogue above where ``c_position="epilogue"`` (or
        alpha, beta ask for it); the result converted to ``output``.  Instead of
        ``accumulation``/``promote_every`` (a ValueError if both are given).

    Integer units (``kind="int-mma"``: s8/u8 operands, s32 accumulator) take integer
    values of their formats (a ValueError names any other value; B has ``b_format``
    where the unit mixes s8 and u8), ``accumulation="chain"`` and no schedule, ``alpha``
    1 and ``beta`` 0 or 1, no ``input_rounding``; they return an int32 array.

    Returns
    -------
    numpy array of the output format's dtype (the schedule's ``output`` if it has one) (float16, float32 or float64; int32 for the integer units) holding
    exactly the hardware's bits; NaN results carry NVIDIA's canonical encodings
    (0x7FFFFFFF for fp32, 0x7FFF for fp16) as Xie et al. Section 4.2 report, except
    for the kinds that propagate NaN payloads (``model.propagates_nan``: FMA chain,
    E-FDPA, FTZ-AddMul; rules in :mod:`workbench.engine.nans`).

    Raises
    ------
    workbench.engine.core.WorkspaceError
        A MemoryError, before anything is allocated, when the product's estimated
        workspace (:func:`workbench.engine.core.workspace_bytes`: the operands with K
        zero-padded to whole blocks of L, each of a schedule's parts on its own, and
        the M x N outputs) exceeds the memory available; the message gives the
        estimate and what to make smaller.
    """
    model = _resolve_unit(model)
    run_prepared = _gpu.runner(device, model)
    A = real_matrix(A, "A")
    B = real_matrix(B, "B")
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"A is {A.shape[0]}x{A.shape[1]} and B is {B.shape[0]}x{B.shape[1]}: inner dimensions differ")
    M, K = A.shape
    N = B.shape[1]
    sched = _resolve_schedule(schedule, accumulation, promote_every)
    if model.operation.integer:
        _check_integer_call(model, sched, alpha, beta, input_rounding)
    cut = None if sched.threading is None else sched.threading.cut(M, N, K)
    if cut is not None:                            # the library's threads: each sub-product on its own
        return _threaded_gemm(A, B, C, model, alpha, beta, sched, scale_a, scale_b, input_rounding, device, cut)
    promotion = None
    if (scale_a is not None or scale_b is not None) and not model.operation.scaled and sched.inner == "promote":
        promotion = _promotion_scales(scale_a, scale_b, M, K, N, cast(int, sched.promote_every))
        scale_a = scale_b = None
    sched = _schedule_run.unit_accumulation(sched, model, compose=promotion is not None)
    sched.split(K, M, N)                           # a K the schedule holds no rule for: ValueError now
    if (0 < M * N * K <= _core.SMALL_WORK and run_prepared is _core.run_prepared and alpha == 1 and beta == 1
            and input_rounding is None and _one_part(sched, model)):
        D = _small_gemm(A, B, C, model, sched, scale_a, scale_b)
        if D is not None:
            return D
    with _core.threads_for(M * N * max(K, 1)):     # one thread count for every stage of the product
        D = _checked_gemm(A, B, C, model, alpha, beta, sched, scale_a, scale_b, input_rounding, run_prepared,
                          promotion)
        if sched.regions:                          # the whole product's split (KRule.m_min/n_min see M and N)
            sched = replace(sched, rules=(_schedules.KRule(0, None, sched.split(K, M, N)),))
        for region in sched.regions:               # outputs of another micro-kernel (checked above with the rest)
            rows, cols = region.outputs(M, N, K)
            if rows.size and cols.size:
                D[np.ix_(rows, cols)] = _checked_gemm(
                    A[rows], B[:, cols], None if C is None else np.asarray(C, dtype=np.float64)[np.ix_(rows, cols)],
                    model, alpha, beta, sched.in_region(region, K, M, N),
                    None if scale_a is None else np.asarray(scale_a, dtype=np.float64)[rows],
                    None if scale_b is None else np.asarray(scale_b, dtype=np.float64)[:, cols],
                    input_rounding, run_prepared)
        return D


def _threaded_gemm(A: np.ndarray, B: np.ndarray, C: np.typing.ArrayLike | None, model: Model, alpha: float,
                   beta: float, sched: _schedules.Schedule, scale_a: np.typing.ArrayLike | None,
                   scale_b: np.typing.ArrayLike | None, input_rounding: str | None, device: str,
                   cut: tuple[list[tuple[int, int]], list[tuple[int, int]]]) -> np.ndarray:
    """D of a product a library cuts over its threads (:class:`~workbench.units.schedules.Threading`):
    every (row range, column range) of ``cut`` a :func:`gemm` of its own with the schedule
    each thread runs (:meth:`~workbench.units.schedules.Threading.per_thread`)."""
    M, N = A.shape[0], B.shape[1]
    inner = cast(_schedules.Threading, sched.threading).per_thread(sched, M, N, A.shape[1])
    Cm = None if C is None else _c_matrix(C, M, N)
    sa = None if scale_a is None else real_matrix(scale_a, "scale_a")
    sb = None if scale_b is None else real_matrix(scale_b, "scale_b")
    D: np.ndarray | None = None
    for r0, r1 in cut[0]:
        for c0, c1 in cut[1]:
            part = gemm(A[r0:r1], B[:, c0:c1], None if Cm is None else Cm[r0:r1, c0:c1], model=model, alpha=alpha,
                        beta=beta, input_rounding=input_rounding, scale_a=None if sa is None else sa[r0:r1],
                        scale_b=None if sb is None else sb[:, c0:c1], device=device, schedule=inner)
            if D is None:
                D = np.empty((M, N), dtype=part.dtype)
            D[r0:r1, c0:c1] = part
    return cast(np.ndarray, D)


def _check_integer_call(model: Model, sched: _schedules.Schedule, alpha: float, beta: float,
                        input_rounding: str | None) -> None:
    """What an integer unit (:attr:`~workbench.engine.model.Operation.integer`) computes
    through :func:`gemm`: the unit's own chain of instructions from C (or 0), exact and
    in its int32 accumulator.  A floating-point epilogue (alpha, beta other than 1 and
    0/1), input rounding, or a schedule whose parts are summed in a floating-point
    format would leave the integer unit, so each is refused with a ValueError."""
    what = f"{getattr(model, 'name', '') or model.kind} is an integer unit ({model.in_format} -> {model.out_format})"
    if alpha != 1 or beta not in (0, 1):
        raise ValueError(f"alpha={alpha!r}, beta={beta!r}: {what}; its D = A @ B + C (beta=1) or A @ B (beta=0) "
                         "stays in the int32 accumulator (scale the int32 result yourself)")
    if input_rounding is not None:
        raise ValueError(f"input_rounding={input_rounding!r}: {what}, whose inputs are integers of their formats; "
                         "convert the data yourself (nothing is rounded silently)")
    if (sched.inner != "chain" or sched.promote_every is not None or sched.rules or sched.regions
            or sched.c_position != "unit" or sched.output is not None):
        raise ValueError(f"schedule {sched.name!r} (accumulation {sched.inner!r}): {what}; only its own chain of "
                         "instructions (accumulation='chain', no schedule) keeps the sum in its int32 accumulator")


def _one_part(sched: _schedules.Schedule, model: Model) -> bool:
    """Whether ``sched`` is one part consumed by the unit from C with nothing after it
    (what :func:`_small_gemm` computes): no rules, regions or conversion, and an fp32
    accumulator of ``"outside"``/``"promote"`` only where it is the output."""
    return (not sched.rules and not sched.regions and sched.c_position == "unit" and sched.output is None
            and (sched.inner == "chain" or model.out_fmt.name == "fp32"))


def _small_gemm(A: np.ndarray, B: np.ndarray, C: np.typing.ArrayLike | None, model: Model,
                sched: _schedules.Schedule, scale_a: np.typing.ArrayLike | None,
                scale_b: np.typing.ArrayLike | None) -> np.ndarray | None:
    """D of a small product in one compiled call (:func:`workbench.engine.core.run_small`,
    which checks A, B, C and the scale factors as it reads them, once), or None where
    the operation has no such path (the general path then runs, and checks).  The shapes
    of C and of the scale factors are checked here as the general path checks them, and
    a value that is not representable raises gemm's error."""
    M, N = A.shape[0], B.shape[1]
    C64 = _c_matrix(C, M, N)
    scales = _scale_matrices(model, scale_a, scale_b, M, A.shape[1], N)
    kw = {} if scales is None else {"scale_a": np.ascontiguousarray(scales[0]),
                                    "scale_b": np.ascontiguousarray(scales[1])}
    try:
        D = _core.run_small(model, np.ascontiguousarray(A), np.ascontiguousarray(B), np.ascontiguousarray(C64),
                            accumulation=sched.inner, promote_every=sched.promote_every, **kw)
    except ValueError as exc:
        raise _with_conversion_hint(exc, model, None) from None
    return None if D is None else _output.finish(D, model)


def _resolve_schedule(schedule: _schedules.Schedule | str | Mapping[str, Any] | None, accumulation: str,
                      promote_every: int | None) -> _schedules.Schedule:
    """The :class:`~workbench.units.schedules.Schedule` that ``schedule`` names, or that of ``accumulation``."""
    if schedule is None:
        return _schedules.from_accumulation(accumulation, promote_every)
    if accumulation != "chain" or promote_every is not None:
        raise ValueError(f"give schedule ({schedule!r}) or accumulation={accumulation!r}/promote_every="
                         f"{promote_every!r}, not both: a schedule says how each part is accumulated (inner)")
    if isinstance(schedule, _schedules.Schedule):
        return schedule
    if isinstance(schedule, str):
        return _schedules.get(schedule)
    if isinstance(schedule, Mapping):
        return _schedules.Schedule.from_dict(schedule)
    raise TypeError(f"schedule={schedule!r}: expected a workbench.units.schedules.Schedule, a name of "
                    f"workbench.units.schedules.SCHEDULES or a dict of Schedule fields")


def explain(a: np.typing.ArrayLike, b: np.typing.ArrayLike, c: float = 0.0, model: UnitSpec | None = None, *,
            scale_a: np.typing.ArrayLike | None = None, scale_b: np.typing.ArrayLike | None = None) -> Trace:
    """Step-by-step trace of d = unit(a, b, c), one output of :func:`gemm`: the
    engine's :func:`~workbench.engine.explain.explain` (Xie et al. 2025 Algorithms 2-11)
    for a unit given in any form :func:`gemm` takes - a Model or Preset,
    ``"H100:fp16:fp32"``, a catalogue name such as ``"cdna3/mfma/fp16->fp32"``, or a
    unit file."""
    if model is None:
        raise TypeError("explain needs the unit: model=workbench.preset(...), a 'DEVICE:IN:OUT' string, a catalogue "
                        "name or a unit file")
    return _explain(a, b, c, _resolve_unit(model), scale_a=scale_a, scale_b=scale_b)


def _checked_gemm(A: np.ndarray, B: np.ndarray, C: np.typing.ArrayLike | None, model: Model, alpha: float,
                  beta: float, sched: _schedules.Schedule, scale_a: np.typing.ArrayLike | None,
                  scale_b: np.typing.ArrayLike | None, input_rounding: str | None,
                  run_prepared: Callable[..., np.ndarray],
                  promotion: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """:func:`gemm` once A and B are float64 matrices of matching inner dimension: each
    step below checks what it reads, once, in the order the errors are reported;
    ``promotion``: the scale factors each promoted part is multiplied by
    (:func:`_promotion_scales`)."""
    M, K = A.shape
    N = B.shape[1]
    A, B = _converted_inputs(A, B, model, input_rounding)
    parts = _schedule_run.Parts.of(sched.split(K, M, N), K)
    _core.check_workspace(model, M, K, N, parts=parts.sizes())
    ops = _prepared(model, A, B, parts, input_rounding)
    C64 = _checked_c(C, M, N, model.out_fmt)
    _check_factors(alpha, beta)
    scales = _checked_scales(model, scale_a, scale_b, M, K, N, parts, sched.name)
    in_unit = alpha == 1 and beta in (0, 1) and sched.c_position != "epilogue"
    C_unit = C64 if (in_unit and beta == 1 and sched.c_position == "unit") else np.zeros((M, N))
    results = _schedule_run.run_parts(model, A, B, ops, scales, parts, C_unit, sched, run_prepared)
    fout = model.out_fmt
    with _core.threads_for(M * N):
        if promotion is not None:
            results = _schedule_run.promoted(results, *promotion)
        if sched.inner != "chain" and fout.name != "fp32":
            results = [_formats.round(D, fout, "rne") for D in results]
        if in_unit and beta == 1 and sched.c_position == "combine":
            results.insert(0, C64)
        D = results[0] if len(results) == 1 else _formats.round(_schedule_run.combine(results, sched), fout, "rne")
        return _output.finish(D, model, C=None if in_unit else C64, alpha=alpha, beta=beta, output=sched.output,
                              output_rounding=sched.output_rounding)


def _converted_inputs(A: np.ndarray, B: np.ndarray, model: Model,
                      input_rounding: str | None) -> tuple[np.ndarray, np.ndarray]:
    """A and B rounded once to the unit's input format in ``input_rounding``'s mode (the
    hardware's or library's conversion of wider data), or unchanged for ``None``."""
    if input_rounding is None:
        return A, B
    if input_rounding not in INPUT_ROUNDINGS:
        raise ValueError(f"input_rounding={input_rounding!r}: expected None (inputs must be representable) "
                         f"or one of {tuple(INPUT_ROUNDINGS)}")
    with _core.threads_for(A.size + B.size):
        return _formats.round(A, model.in_fmt, input_rounding), _formats.round(B, model.in_fmt, input_rounding)


def _prepared(model: Model, A: np.ndarray, B: np.ndarray, parts: _schedule_run.Parts,
              input_rounding: str | None) -> list[_core.Operands]:
    """Each accumulator's operands decomposed once (:func:`workbench.engine.core.prepare`,
    which checks that A and B are representable)."""
    try:
        if parts.whole:
            return [_core.prepare(model, A, B)]
        return [_core.prepare(model, A[:, q], B[q]) for q in parts.positions]
    except ValueError as exc:
        raise _with_conversion_hint(exc, model, input_rounding) from None


def _with_conversion_hint(exc: ValueError, model: Model, input_rounding: str | None) -> ValueError:
    """``exc``, and where it names a value of A or B that a floating-point unit's input
    format cannot hold, the conversions gemm could apply instead (``input_rounding``)."""
    text = str(exc)
    if input_rounding is None and text.startswith(("A[", "B[")) and "not representable" in text \
            and not model.operation.integer:
        return ValueError(f"{text}; or let gemm convert as the hardware does: input_rounding='rz', 'rne' or "
                          f"'rna' (this preset: {getattr(model, 'wider_inputs', '') or 'see INPUT_ROUNDINGS'})")
    return exc


def _c_matrix(C: np.typing.ArrayLike | None, M: int, N: int) -> np.ndarray:
    """C as a float64 (M, N) matrix (zeros for None); its values are checked by whoever reads them."""
    if C is None:
        return np.zeros((M, N))
    Cm = real_matrix(C, "C")
    if Cm.shape != (M, N):
        raise ValueError(f"C has shape {Cm.shape}; expected {(M, N)}")
    return Cm


def _checked_c(C: np.typing.ArrayLike | None, M: int, N: int, fout: _formats.FloatFormat) -> np.ndarray:
    """C as float64, of shape (M, N) and representable in the output format (zeros for None)."""
    Cm = _c_matrix(C, M, N)
    if C is None:
        return Cm
    with _core.threads_for(M * N):
        return _formats.check_representable(Cm, fout, "C")


def _check_factors(alpha: float, beta: float) -> None:
    for name, v in (("alpha", alpha), ("beta", beta)):
        if not isinstance(v, (int, float, np.floating, np.integer)) or not np.isfinite(v):
            raise ValueError(f"{name}={v!r}: expected a finite real number")


def _scale_matrices(model: Model, scale_a: np.typing.ArrayLike | None, scale_b: np.typing.ArrayLike | None,
                    M: int, K: int, N: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The block scale factors as float64 matrices of the product's shapes, or None for a
    unit that takes none; their values are checked by whoever reads them."""
    if scale_a is None and scale_b is None:
        if model.operation.scaled:
            raise ValueError(f"model kind {model.kind!r} needs scale_a and scale_b (block scale factors)")
        return None
    if not model.operation.scaled:
        raise ValueError(f"scale_a/scale_b given but model kind {model.kind!r} takes no scale factors (they are "
                         f"applied at promotion only with accumulation='promote')")
    if scale_a is None or scale_b is None:
        raise ValueError("scaled models need both scale_a and scale_b")
    kb = cast(int, model.k_block)       # a scaled operation's parameter class requires it
    nb = -(-K // kb)
    sa, sb = real_matrix(scale_a, "scale_a"), real_matrix(scale_b, "scale_b")
    if sa.shape != (M, nb) or sb.shape != (nb, N):
        raise ValueError(f"scale_a must have shape {(M, nb)} and scale_b {(nb, N)} (k_block={kb}); "
                         f"got {sa.shape} and {sb.shape}")
    return sa, sb


def _promotion_scales(scale_a: np.typing.ArrayLike | None, scale_b: np.typing.ArrayLike | None, M: int, K: int,
                      N: int, every: int) -> tuple[np.ndarray, np.ndarray]:
    """The scale factors a ``"promote"`` accumulation applies at promotion on a unit that
    takes none (DeepSeek-V3's fine-grained quantisation: one factor per row of A and
    ``every`` elements of K, one per column of B and ``every`` elements): both given,
    of shapes (M, ceil(K / every)) and (ceil(K / every), N), finite fp32 values."""
    if scale_a is None or scale_b is None:
        raise ValueError("scale factors at promotion need both scale_a and scale_b")
    nb = -(-K // every)
    sa, sb = real_matrix(scale_a, "scale_a"), real_matrix(scale_b, "scale_b")
    if sa.shape != (M, nb) or sb.shape != (nb, N):
        raise ValueError(f"scale_a must have shape {(M, nb)} and scale_b {(nb, N)} (one factor per "
                         f"promote_every={every} elements of K); got {sa.shape} and {sb.shape}")
    for name, s in (("scale_a", sa), ("scale_b", sb)):
        if not np.isfinite(s).all():
            raise ValueError(f"{name}[{', '.join(map(str, np.argwhere(~np.isfinite(s))[0]))}] is not finite: "
                             f"expected finite fp32 scale factors")
        _formats.check_representable(s, "fp32", name)
    return sa, sb


def _checked_scales(model: Model, scale_a: np.typing.ArrayLike | None, scale_b: np.typing.ArrayLike | None,
                    M: int, K: int, N: int, parts: _schedule_run.Parts,
                    schedule: str) -> list[tuple[np.ndarray | None, np.ndarray | None]]:
    """Each accumulator's block scale factors (None for units that take none), checked
    against the product's shape and the unit's scale format."""
    scales = _scale_matrices(model, scale_a, scale_b, M, K, N)
    if scales is None:
        return [(None, None)] * (1 if parts.whole else len(parts.positions))
    sf = cast(str, model.scale_format)
    kb = cast(int, model.k_block)
    nb = scales[0].shape[1]
    with _core.threads_for(M * nb + nb * N):
        sa = _formats.check_representable(scales[0], sf, "scale_a")
        sb = _formats.check_representable(scales[1], sf, "scale_b")
    if parts.whole:
        return [(sa, sb)]
    return [_schedule_run.part_scales(sa, sb, q, K, kb, schedule) for q in parts.positions]
