"""This CPU's bf16 dot-product unit: ``VDPBF16PS`` (AVX512-BF16), run and modelled.

Two halves, both on bit patterns (bf16 as ``uint16``, fp32 as ``float32``), 16 output
lanes to an instruction, lane ``i`` reading bf16 elements ``2i`` (low) and ``2i + 1``
(high) of ``a`` and ``b``:

* :func:`dpbf16ps` runs the real instruction: LLVM IR text declaring
  ``llvm.x86.avx512bf16.dpbf16ps.512`` on ``<32 x bfloat>`` operands, parsed and
  compiled for the host CPU by ``llvmlite.binding`` (no compiler at install time; a numba
  ``@intrinsic`` on i16/i32 vectors crashed the process and llvmlite's JIT has no
  inline-assembly parser).  :func:`unit_available` says whether this CPU has it, and
  why not where it does not.
* :func:`dpbf16ps_model` is Intel's published pseudo-code (Intel SDM Vol. 2,
  "VDPBF16PS - Dot Product of BF16 Pairs Accumulated into Packed Single Precision"),
  vectorised: per lane, two fp32 fused multiply-adds, the *high* pair first
  (``d = fma(a[2i+1], b[2i+1], c)``, then ``fma(a[2i], b[2i], d)``), each rounded to
  nearest even; input denormals are treated as zero and output denormals flushed to
  zero (sign kept; a result is flushed when it is subnormal after rounding); MXCSR is
  neither read nor written; a NaN result follows the SDM's Table 5-1 priorities
  (src1 low, src2 low, src1 high, src2 high, srcdest), quieted, and an invalid
  operation without NaN operands gives the x86 default NaN 0xFFC00000.

The engine runs the same arithmetic as a unit: the preset
``x86-avx512-bf16/vdpbf16ps/bf16->fp32`` (``workbench.preset("Zen4", "bf16", "fp32")``,
kind ``pair-dot``, :mod:`workbench.engine.operations.pair_dot`), whose chains of
instructions take any K.

The silicon of this project's development machine (AMD EPYC, family 25 model 1:
Zen 3) has no AVX-512, so the differential test against the instruction
(``tests/test_cpu_bf16.py``) skips there with that reason; where the two part on a CPU
that has the instruction, the model is to follow the silicon and say where.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

__all__ = ["IR", "unit_available", "dpbf16ps", "dpbf16ps_model", "compile_ir"]

#: The kernel: ``c[i] <- VDPBF16PS(c[i], a[i], b[i])`` for i < n (n >= 1), one 512-bit
#: instruction per i (a, b: 32 bf16; c: 16 fp32).
IR = r"""
declare <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512(<16 x float>, <32 x bfloat>, <32 x bfloat>)

define void @dpbf16ps_loop(ptr %a, ptr %b, ptr %c, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %pa = getelementptr <32 x bfloat>, ptr %a, i64 %i
  %pb = getelementptr <32 x bfloat>, ptr %b, i64 %i
  %pc = getelementptr <16 x float>, ptr %c, i64 %i
  %va = load <32 x bfloat>, ptr %pa, align 2
  %vb = load <32 x bfloat>, ptr %pb, align 2
  %vc = load <16 x float>, ptr %pc, align 4
  %r = call <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512(<16 x float> %vc, <32 x bfloat> %va, <32 x bfloat> %vb)
  store <16 x float> %r, ptr %pc, align 4
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""


def _binding():
    from llvmlite import binding as llvm

    for init in ("initialize_native_target", "initialize_native_asmprinter"):
        getattr(llvm, init)()
    return llvm


def unit_available() -> tuple[bool, str]:
    """(True, host CPU name) where this CPU runs ``VDPBF16PS``, else (False, why not)."""
    try:
        llvm = _binding()
    except ImportError:
        return False, "llvmlite is not installed"
    name = llvm.get_host_cpu_name()
    features = llvm.get_host_cpu_features()
    missing = [f for f in ("avx512f", "avx512bf16") if not features.get(f, False)]
    if missing:
        return False, f"this CPU ({name}) lacks {', '.join(missing)}: VDPBF16PS cannot run here"
    return True, name


def compile_ir(cpu: str | None = None, features: str | None = None, assembly: bool = False):
    """Parse :data:`IR` and compile it for ``cpu``/``features`` (default: the host).  With
    ``assembly`` the generated assembly text is returned (any x86-64 host can do this,
    whether or not it has the instruction); otherwise the engine that holds the code."""
    llvm = _binding()
    mod = llvm.parse_assembly(IR)
    mod.verify()
    target = llvm.Target.from_default_triple()
    tm = target.create_target_machine(cpu=cpu if cpu is not None else llvm.get_host_cpu_name(),
                                      features=features if features is not None
                                      else llvm.get_host_cpu_features().flatten(), opt=2)
    if assembly:
        return tm.emit_assembly(mod)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    return engine


@functools.cache
def _kernel():
    ok, why = unit_available()
    if not ok:
        raise RuntimeError(why)
    engine = compile_ir()
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        engine.get_function_address("dpbf16ps_loop"))
    return engine, fn


def _check(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    c = np.ascontiguousarray(c)
    if a.dtype != np.uint16 or b.dtype != np.uint16:
        raise ValueError(f"a and b: bf16 bit patterns as uint16 expected, got {a.dtype} and {b.dtype}")
    if c.dtype != np.float32:
        raise ValueError(f"c: float32 expected, got {c.dtype}")
    if a.shape != b.shape or a.ndim != 2 or a.shape[1] != 32 or c.shape != (a.shape[0], 16):
        raise ValueError(f"shapes a {a.shape}, b {b.shape}, c {c.shape}: expected (n, 32), (n, 32), (n, 16)")
    return a, b, c


def dpbf16ps(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The real instruction: ``VDPBF16PS(c, a, b)`` for each of n rows (a, b: (n, 32)
    uint16 bf16 patterns, c: (n, 16) float32), a new (n, 16) float32 array.  Raises
    RuntimeError (with the reason) on a CPU without AVX512-BF16."""
    a, b, c = _check(a, b, c)
    out = c.copy()
    if len(out):
        _, fn = _kernel()
        fn(a.ctypes.data, b.ctypes.data, out.ctypes.data, len(out))
    return out


_QNAN = np.uint32(0x00400000)
_DEFAULT_NAN = np.uint32(0xFFC00000)
_MIN_NORMAL = np.float64(2.0 ** -126)


def _daz(x: np.ndarray) -> np.ndarray:
    """bf16 patterns -> float64 values, denormals as zeros of their sign (DAZ)."""
    bits = x.astype(np.uint32) << 16
    sub = (bits & np.uint32(0x7F800000)) == 0
    bits = np.where(sub, bits & np.uint32(0x80000000), bits)
    with np.errstate(invalid="ignore"):     # NaN patterns: the payloads are chosen apart
        return bits.view(np.float32).astype(np.float64)


def _fma_ftz(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """RNE_fp32(x * y + z) for fp32 values held in float64 (x, y bf16 values, so x * y is
    exact in float64), output denormals flushed to zero of the result's sign.  The
    float64 sum is made round-to-odd (TwoSum's error term sets the sticky bit), so the
    one conversion to fp32 rounds the exact value correctly (53 >= 24 + 2)."""
    with np.errstate(invalid="ignore", over="ignore"):
        p = x * y
        s = p + z
        bp = s - z
        e = (p - bp) + (z - (s - bp))
        fin = np.isfinite(s)
        e = np.where(fin, e, 0.0)
        sb = s.view(np.int64)
        odd = (sb & 1) == 1
        bump = (e != 0) & ~odd
        toward = np.where((e > 0) == (s > 0), 1, -1)
        s = np.where(bump, (sb + toward).view(np.float64), s)
        r = s.astype(np.float32)
    sub = (r != 0) & (np.abs(r) < np.float32(_MIN_NORMAL))
    return np.where(sub, np.copysign(np.float32(0), r), r)


def dpbf16ps_model(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Intel's pseudo-code for ``VDPBF16PS(c, a, b)`` (module docstring), same arguments
    and result as :func:`dpbf16ps`, computed with numpy on all lanes at once."""
    a, b, c = _check(a, b, c)
    alo, ahi = _daz(a[:, 0::2]), _daz(a[:, 1::2])
    blo, bhi = _daz(b[:, 0::2]), _daz(b[:, 1::2])
    cbits = c.view(np.uint32)
    csub = (cbits & np.uint32(0x7F800000)) == 0
    with np.errstate(invalid="ignore"):
        c64 = np.where(csub, cbits & np.uint32(0x80000000), cbits).view(np.float32).astype(np.float64)
    d = _fma_ftz(ahi, bhi, c64).astype(np.float64)
    r = _fma_ftz(alo, blo, d)
    bits = r.view(np.uint32).copy()
    nan = np.isnan(r)
    if nan.any():
        # Table 5-1: the first NaN operand in priority order, quieted; else the default NaN
        pick = np.full(r.shape, _DEFAULT_NAN, dtype=np.uint32)
        done = np.zeros(r.shape, dtype=bool)
        for src in (a[:, 0::2], b[:, 0::2], a[:, 1::2], b[:, 1::2]):
            w = src.astype(np.uint32) << 16
            isnan = ((w & np.uint32(0x7F800000)) == np.uint32(0x7F800000)) & ((w & np.uint32(0x007FFFFF)) != 0)
            take = nan & ~done & isnan
            pick = np.where(take, w | _QNAN, pick)
            done |= take
        cnan = np.isnan(c)
        take = nan & ~done & cnan
        pick = np.where(take, cbits | _QNAN, pick)
        bits = np.where(nan, pick, bits)
    return bits.view(np.float32)
