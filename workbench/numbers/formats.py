"""Number formats of matrix units and exact rounding into them.

A :class:`FloatFormat` describes a binary floating-point format by its encoding
(exponent bits, fraction bits, bias, how Inf/NaN are encoded, subnormal support,
whether it has a sign).  Everything a numerical analyst reads off a format table
(precision ``p`` including the implicit bit, ``emin``, ``emax``, largest value,
smallest normal and subnormal, unit roundoff) is derived from the encoding, so the
tables of Khattak & Mikaitis (2025, Table I) and Fasi et al. (2021, Table 3) are
regenerated from the registry rather than typed in.

Every value of every format here is exactly a float64, so values travel as float64
numpy arrays.  :func:`round` maps float64 arrays to the nearest values of a format
in one of nine rounding modes (one compiled pass, parallel over elements);
:func:`to_bits` / :func:`from_bits` convert between values and bit patterns.

Special-value conventions (``FloatFormat.special``):

``"ieee"``
    IEEE 754: the all-ones exponent field encodes Inf (zero fraction) and NaN.
``"fn"``
    Finite, with NaN: no Inf; the pattern with all exponent and fraction bits set
    is NaN (OCP 8-bit E4M3, the MX scale E8M0, the NVFP4 scale UE4M3).
``"fnuz"``
    Finite, NaN, unsigned zero (AMD/Graphcore fp8): no Inf, no -0; the
    negative-zero pattern ``0x80`` is the only NaN.
``"none"``
    Finite only: no Inf, no NaN (OCP FP6 and FP4).
"""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass, field
from typing import Literal

import numba
import numpy as np

from .validation import real_array, unknown_name
from .._runtime.threads import threads_for

__all__ = [
    "FloatFormat",
    "ROUNDING_MODES",
    "ROUNDING_CODES",
    "format",
    "list_formats",
    "register_format",
    "format_table",
    "round",
    "rounding_counts",
    "round_counted",
    "to_bits",
    "from_bits",
    "is_representable",
    "check_representable",
    "IntFormat",
    "NumberFormat",
    "int_format",
    "is_int_format",
    "number_format",
    "list_int_formats",
]

Special = Literal["ieee", "fn", "fnuz", "none"]

#: Rounding modes of :func:`round`, with their meaning.
ROUNDING_MODES: dict[str, str] = {
    "rne": "round to nearest, ties to even",
    "rna": "round to nearest, ties away from zero",
    "rnz": "round to nearest, ties toward zero",
    "rz": "round toward zero (truncation)",
    "rd": "round down, toward -Inf",
    "ru": "round up, toward +Inf",
    "ra": "round away from zero",
    "ro": "round to odd (inexact results get an odd last bit)",
    "sr": "stochastic rounding: up with probability equal to the distance from the value below",
}
#: The integer code of each rounding mode: the one enumeration used from here to the
#: engine's compiled kernels (:data:`workbench.engine.ops.MODE_CODES` is its subset).
ROUNDING_CODES: dict[str, int] = {name: code for code, name in enumerate(ROUNDING_MODES)}
RNE, RNA, RNZ, RZ, RD, RU, RA, RO, SR = (ROUNDING_CODES[m] for m in ROUNDING_MODES)


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format, defined by its encoding.

    Parameters
    ----------
    name:
        Canonical name (``"fp16"``, ``"fp8_e4m3"``, ...).
    exp_bits, man_bits:
        Width of the exponent and (stored) fraction fields.
    bias:
        Exponent bias: a normal number with exponent field ``E`` has exponent
        ``E - bias``.
    special:
        How Inf and NaN are encoded: ``"ieee"``, ``"fn"``, ``"fnuz"`` or ``"none"``
        (see the module docstring).
    subnormals:
        Whether the all-zeros exponent field encodes subnormals (``False`` for
        exponent-only scale formats such as E8M0, where it is the value
        ``2**-bias``).
    signed:
        Whether the format has a sign bit (``False`` for the scale formats E8M0
        and UE4M3).
    description:
        Where the format is used, for tables.
    """

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    special: Special = "ieee"
    subnormals: bool = True
    signed: bool = True
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.special not in ("ieee", "fn", "fnuz", "none"):
            raise ValueError(
                f"special={self.special!r} is not a known Inf/NaN convention; "
                "expected one of 'ieee', 'fn', 'fnuz', 'none'"
            )
        if not 1 <= self.exp_bits <= 11:
            raise ValueError(f"exp_bits={self.exp_bits} is out of range; expected 1 to 11")
        if not 0 <= self.man_bits <= 52:
            raise ValueError(f"man_bits={self.man_bits} is out of range; expected 0 to 52")
        if self.special == "ieee" and self.exp_bits < 2:
            raise ValueError("an IEEE-style format needs exp_bits >= 2 (one field value is Inf/NaN)")
        if self.special == "ieee" and self.man_bits < 1:
            raise ValueError(
                f"an IEEE-style format needs man_bits >= 1 (got {self.man_bits}): with no fraction bit "
                "NaN cannot be told from Inf; use special='fn' (NaN = all ones, no Inf) or 'none'"
            )
        if not self.subnormals and self.man_bits != 0:
            raise ValueError(
                "formats with fraction bits encode subnormals in the zero exponent field; "
                "subnormals=False is only meaningful for exponent-only formats (man_bits=0). "
                "To flush subnormals when rounding, use round(..., subnormals=False)."
            )
        if self.emin < -1022 or self.emax > 1023:
            raise ValueError(
                f"format {self.name!r} has exponent range [{self.emin}, {self.emax}], "
                "which float64 cannot hold exactly; expected within [-1022, 1023]"
            )

    # ------------------------------------------------------------------ derived
    @property
    def p(self) -> int:
        """Precision in bits, including the implicit leading bit."""
        return self.man_bits + 1

    @property
    def width(self) -> int:
        """Storage width in bits."""
        return int(self.signed) + self.exp_bits + self.man_bits

    @property
    def _top_field(self) -> int:
        """Largest exponent field value that encodes finite numbers."""
        top = (1 << self.exp_bits) - 1
        if self.special == "ieee" or (self.special == "fn" and self.man_bits == 0):
            top -= 1
        return top

    @property
    def emin(self) -> int:
        """Exponent of the smallest positive normal number."""
        return (0 if not self.subnormals else 1) - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest finite number."""
        return self._top_field - self.bias

    @property
    def max_significand(self) -> int:
        """Largest integer significand (p bits) at exponent emax."""
        full = (1 << self.p) - 1
        if self.special == "fn" and self.man_bits > 0:
            return full - 1  # all-ones fraction at the top exponent is NaN
        return full

    @property
    def max(self) -> float:
        """Largest finite value."""
        return math.ldexp(self.max_significand, self.emax - self.man_bits)

    @property
    def min_normal(self) -> float:
        """Smallest positive normal number, 2**emin."""
        return math.ldexp(1.0, self.emin)

    @property
    def min_subnormal(self) -> float:
        """Smallest positive number (the smallest normal when there are no subnormals)."""
        return math.ldexp(1.0, self.emin - self.man_bits) if self.subnormals else self.min_normal

    @property
    def unit_roundoff(self) -> float:
        """Unit roundoff u = 2**-p of round to nearest."""
        return math.ldexp(1.0, -self.p)

    @property
    def eps(self) -> float:
        """Machine epsilon 2**(1-p): distance from 1 to the next larger number."""
        return math.ldexp(1.0, 1 - self.p)

    @property
    def has_inf(self) -> bool:
        return self.special == "ieee"

    @property
    def has_nan(self) -> bool:
        return self.special != "none"

    @property
    def has_negative_zero(self) -> bool:
        return self.signed and self.special != "fnuz"

    @property
    def has_zero(self) -> bool:
        return self.subnormals

    @property
    def numpy_dtype(self) -> np.dtype | None:
        """The numpy dtype with exactly this format's values and encoding, if any."""
        return _NUMPY_DTYPES.get((self.exp_bits, self.man_bits, self.bias, self.special, self.signed))

    @property
    def bits_dtype(self) -> np.dtype:
        """Smallest unsigned integer dtype that holds a bit pattern."""
        for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
            if self.width <= np.dtype(dt).itemsize * 8:
                return np.dtype(dt)
        raise AssertionError("width above 64 bits is excluded by __post_init__")

    def __str__(self) -> str:
        return self.name

    # ------------------------------------------------------------- constructors
    @classmethod
    def custom(
        cls,
        name: str = "custom",
        *,
        exp_bits: int | None = None,
        man_bits: int | None = None,
        bias: int | None = None,
        p: int | None = None,
        emin: int | None = None,
        emax: int | None = None,
        special: Special = "ieee",
        subnormals: bool = True,
        signed: bool = True,
    ) -> "FloatFormat":
        """Build a format either from its encoding or from (p, emin, emax).

        ``FloatFormat.custom(exp_bits=6, man_bits=9)`` gives an IEEE-style E6M9 with
        bias ``2**(exp_bits-1) - 1``.  ``FloatFormat.custom(p=11, emin=-14, emax=15)``
        gives binary16: the fraction width is ``p - 1``, the bias ``1 - emin`` and the
        exponent field the narrowest that reaches ``emax``; a ValueError says so when
        the requested ``emax`` is not the one that encoding gives.
        """
        if p is not None or emin is not None or emax is not None:
            if exp_bits is not None or man_bits is not None:
                raise ValueError("give either exp_bits/man_bits or p/emin/emax, not both")
            if p is None or emin is None or emax is None:
                raise ValueError("p, emin and emax must be given together")
            if p < 1:
                raise ValueError(f"p={p} is invalid; expected at least 1 (the implicit bit)")
            if emax < emin:
                raise ValueError(f"emax={emax} is below emin={emin}")
            b = (1 - emin) if subnormals else -emin
            top = emax + b + (1 if special == "ieee" else 0)
            e_bits = builtins.max(int(top).bit_length(), 2 if special == "ieee" else 1)
            fmt = cls(name, e_bits, p - 1, b, special, subnormals, signed)
            if fmt.emax != emax:
                raise ValueError(
                    f"no {special!r} encoding with p={p}, emin={emin} has emax={emax}: "
                    f"{e_bits} exponent bits give emax={fmt.emax}; pass exp_bits/man_bits/bias instead"
                )
            return fmt
        if exp_bits is None or man_bits is None:
            raise ValueError("custom formats need exp_bits and man_bits (or p, emin and emax)")
        if bias is None:
            bias = (1 << (exp_bits - 1)) - 1
        return cls(name, exp_bits, man_bits, bias, special, subnormals, signed)


_NUMPY_DTYPES: dict[tuple[int, int, int, str, bool], np.dtype] = {
    (11, 52, 1023, "ieee", True): np.dtype(np.float64),
    (8, 23, 127, "ieee", True): np.dtype(np.float32),
    (5, 10, 15, "ieee", True): np.dtype(np.float16),
}


def _registry() -> dict[str, FloatFormat]:
    F = FloatFormat
    fmts = [
        F("fp64", 11, 52, 1023, description="IEEE binary64 (double)"),
        F("fp32", 8, 23, 127, description="IEEE binary32 (single)"),
        F("tf32", 8, 10, 127, description="NVIDIA TensorFloat-32 (19 bits; 'tf19' in Khattak-Mikaitis)"),
        F("bf16", 8, 7, 127, description="bfloat16"),
        F("fp16", 5, 10, 15, description="IEEE binary16 (half)"),
        F("fp8_e4m3", 4, 3, 7, "fn", description="OCP 8-bit E4M3 (no Inf, NaN = S.1111.111)"),
        F("fp8_e5m2", 5, 2, 15, description="OCP 8-bit E5M2 (IEEE-style)"),
        F("fp8_e4m3fnuz", 4, 3, 8, "fnuz", description="AMD CDNA3 E4M3 (no Inf, no -0, NaN = 0x80)"),
        F("fp8_e5m2fnuz", 5, 2, 16, "fnuz", description="AMD CDNA3 E5M2 (no Inf, no -0, NaN = 0x80)"),
        F("fp6_e2m3", 2, 3, 1, "none", description="OCP MX FP6 E2M3 (finite only)"),
        F("fp6_e3m2", 3, 2, 3, "none", description="OCP MX FP6 E3M2 (finite only)"),
        F("fp4_e2m1", 2, 1, 1, "none", description="OCP MX FP4 E2M1 (finite only)"),
        F("e8m0", 8, 0, 127, "fn", subnormals=False, signed=False,
          description="OCP MX scale: unsigned powers of two 2^-127..2^127, NaN = 0xFF"),
        F("ue4m3", 4, 3, 7, "fn", signed=False, description="NVFP4 block scale: unsigned E4M3 (7 bits)"),
        F("e8m13", 8, 13, 127,
          description="fp32 with 13 fraction bits: the reduced accumulator of Ada/Hopper fp8 sums"),
    ]
    return {f.name: f for f in fmts}


_REGISTRY = _registry()

_ALIASES = {
    "double": "fp64", "binary64": "fp64", "float64": "fp64", "f64": "fp64",
    "single": "fp32", "binary32": "fp32", "float32": "fp32", "f32": "fp32", "float": "fp32",
    "tf19": "tf32", "tensorfloat32": "tf32", "tensorfloat_32": "tf32",
    "bfloat16": "bf16", "bfloat": "bf16",
    "half": "fp16", "binary16": "fp16", "float16": "fp16", "f16": "fp16",
    "e4m3": "fp8_e4m3", "e4m3fn": "fp8_e4m3", "fp8_e4m3fn": "fp8_e4m3", "float8_e4m3fn": "fp8_e4m3",
    "e5m2": "fp8_e5m2", "float8_e5m2": "fp8_e5m2",
    "e4m3fnuz": "fp8_e4m3fnuz", "float8_e4m3fnuz": "fp8_e4m3fnuz",
    "e5m2fnuz": "fp8_e5m2fnuz", "float8_e5m2fnuz": "fp8_e5m2fnuz",
    "e2m3": "fp6_e2m3", "e2m3fn": "fp6_e2m3", "float6_e2m3fn": "fp6_e2m3",
    "e3m2": "fp6_e3m2", "e3m2fn": "fp6_e3m2", "float6_e3m2fn": "fp6_e3m2",
    "e2m1": "fp4_e2m1", "e2m1fn": "fp4_e2m1", "fp4": "fp4_e2m1", "float4_e2m1fn": "fp4_e2m1",
    "ue8m0": "e8m0", "e8m0fnu": "e8m0", "float8_e8m0fnu": "e8m0",
    "nvfp4_scale": "ue4m3",
}


def _normalise(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def format(name: str | FloatFormat) -> FloatFormat:  # noqa: A001 - public API name
    """Look up a format by any of the names users type.

    Accepts canonical names (``"fp16"``, ``"fp8_e4m3"``) and aliases such as
    ``"binary16"``, ``"half"``, ``"bfloat16"``, ``"tf19"``, ``"e4m3"``, ``"fp8-e5m2"``.
    A :class:`FloatFormat` is returned unchanged.  Unknown names raise a ValueError
    listing the known ones.
    """
    if isinstance(name, FloatFormat):
        return name
    if not isinstance(name, str):
        raise TypeError(f"format name must be a str or FloatFormat, got {type(name).__name__}: {name!r}")
    key = _normalise(name)
    key = _ALIASES.get(key, key)
    try:
        return _REGISTRY[key]
    except KeyError:
        if is_int_format(name):
            raise ValueError(f"{name!r} is an integer format ({int_format(name).range_text()}), not a floating-point "
                             "one: workbench.numbers.formats.int_format / number_format look it up") from None
        raise unknown_name("format", name, [*_REGISTRY, *sorted(_ALIASES)]) from None


def register_format(fmt: FloatFormat) -> FloatFormat:
    """Make a custom format known by its name, so that models can name it (unit files
    register the formats they describe: :mod:`workbench.units.unitfile`).

    Registering a name again with the same encoding changes nothing; a name (or alias)
    already taken by another encoding raises a ValueError naming both encodings.
    Returns the registered format."""
    if not isinstance(fmt, FloatFormat):
        raise TypeError(f"register_format takes a FloatFormat, got {type(fmt).__name__}: {fmt!r}")
    key = _normalise(fmt.name)
    if key != fmt.name or not key:
        raise ValueError(f"format name {fmt.name!r}: expected a lower-case name without spaces or '-' ({key!r})")
    if key in _ALIASES:
        raise ValueError(f"format name {fmt.name!r} is an alias of {_ALIASES[key]!r}; choose another name")
    known = _REGISTRY.get(key)
    if known is not None:
        if known != fmt:
            raise ValueError(f"format {fmt.name!r} is registered with another encoding ({known!r}); got {fmt!r}")
        return known
    _REGISTRY[key] = fmt
    return fmt


def list_formats() -> list[FloatFormat]:
    """All registered formats, widest first."""
    return list(_REGISTRY.values())


def format_table() -> list[dict[str, object]]:
    """One row per registered format: the columns of Khattak-Mikaitis Table I and
    Fasi et al. Table 3 (p, emin, emax, largest, smallest normal, smallest subnormal,
    unit roundoff), plus the encoding."""
    rows = []
    for f in list_formats():
        rows.append(
            {
                "name": f.name,
                "bits": f.width,
                "encoding": f"{'S' if f.signed else 'U'}E{f.exp_bits}M{f.man_bits}",
                "p": f.p,
                "emin": f.emin,
                "emax": f.emax,
                "largest": f.max,
                "smallest_normal": f.min_normal,
                "smallest_subnormal": f.min_subnormal if f.subnormals else None,
                "unit_roundoff": f.unit_roundoff,
                "inf_nan": f.special,
                "description": f.description,
            }
        )
    return rows


# ------------------------------------------------------------ integer formats
@dataclass(frozen=True)
class IntFormat:
    """A two's-complement (``signed``) or unsigned binary integer format of ``bits`` bits:
    the operands and accumulators of integer matrix units (NVIDIA IMMA ``.s8``/``.u8``
    -> ``.s32``, AMD ``V_MFMA_I32_*_I8``).

    Every value of these formats (at most 32 bits) is exactly a float64, so integer
    operands travel as float64 arrays as every other format's do; the input gate
    (:func:`check_representable`) refuses anything that is not an integer in
    ``[min, max]`` (a fraction, 128 for ``s8``, -1 or 256 for ``u8``, NaN, Inf) with the
    value and the range in the message - never rounding or wrapping it silently.
    Integer formats are not floating-point formats: :func:`format` does not return them
    (its callers read ``p``, ``emin``, ...), :func:`int_format` and :func:`number_format`
    do.
    """

    name: str
    bits: int
    signed: bool = True
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.bits, int) or isinstance(self.bits, bool) or not 2 <= self.bits <= 32:
            raise ValueError(f"bits={self.bits!r}: expected an integer format of 2 to 32 bits (every value exact "
                             "in float64 and in the engine's int64 sums)")

    @property
    def min(self) -> int:
        """Smallest value: -2^(bits-1) signed, 0 unsigned."""
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        """Largest value: 2^(bits-1) - 1 signed, 2^bits - 1 unsigned."""
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def width(self) -> int:
        """Storage width in bits."""
        return self.bits

    @property
    def numpy_dtype(self) -> np.dtype | None:
        """The numpy integer dtype holding exactly this format's values, if any."""
        return _INT_DTYPES.get((self.bits, self.signed))

    @property
    def has_nan(self) -> bool:
        return False

    @property
    def has_inf(self) -> bool:
        return False

    def range_text(self) -> str:
        """``"integers -128..127"``: what the input gate says it expected."""
        return f"integers {self.min}..{self.max}"

    def __str__(self) -> str:
        return self.name


#: a number format of :mod:`workbench.numbers.formats`: floating-point or integer
NumberFormat = FloatFormat | IntFormat

_INT_DTYPES: dict[tuple[int, bool], np.dtype] = {
    (8, True): np.dtype(np.int8), (8, False): np.dtype(np.uint8),
    (16, True): np.dtype(np.int16), (16, False): np.dtype(np.uint16),
    (32, True): np.dtype(np.int32), (32, False): np.dtype(np.uint32),
}

_INT_REGISTRY: dict[str, IntFormat] = {f.name: f for f in (
    IntFormat("s8", 8, True, "signed 8-bit integer (PTX .s8, AMD I8): -128..127"),
    IntFormat("u8", 8, False, "unsigned 8-bit integer (PTX .u8): 0..255"),
    IntFormat("s32", 32, True, "signed 32-bit integer accumulator (PTX .s32, AMD I32): -2^31..2^31-1"),
)}

_INT_ALIASES = {"int8": "s8", "i8": "s8", "sint8": "s8", "uint8": "u8", "int32": "s32", "i32": "s32",
                "sint32": "s32"}


def _int_key(name: str) -> str | None:
    """The registered integer format's name that ``name`` spells, None when none."""
    key = _normalise(name)
    key = _INT_ALIASES.get(key, key)
    return key if key in _INT_REGISTRY else None


def is_int_format(name: object) -> bool:
    """Whether ``name`` (a name, alias or format object) is an integer format."""
    if isinstance(name, IntFormat):
        return True
    return isinstance(name, str) and _int_key(name) is not None


def int_format(name: str | IntFormat) -> IntFormat:
    """The integer format a name spells (``"s8"``, ``"u8"``, ``"s32"`` and aliases such as
    ``"int8"``, ``"uint8"``, ``"int32"``, ``"i8"``); an :class:`IntFormat` is returned
    unchanged, an unknown name raises a ValueError listing the known ones."""
    if isinstance(name, IntFormat):
        return name
    if not isinstance(name, str):
        raise TypeError(f"integer format name must be a str or IntFormat, got {type(name).__name__}: {name!r}")
    key = _int_key(name)
    if key is None:
        raise unknown_name("integer format", name, [*_INT_REGISTRY, *sorted(_INT_ALIASES)])
    return _INT_REGISTRY[key]


def number_format(name: str | FloatFormat | IntFormat) -> FloatFormat | IntFormat:
    """:func:`int_format` for integer names, :func:`format` for every other."""
    if isinstance(name, IntFormat) or is_int_format(name):
        return int_format(name)   # type: ignore[arg-type]
    return format(name)           # type: ignore[arg-type]


def list_int_formats() -> list[IntFormat]:
    """The integer formats."""
    return list(_INT_REGISTRY.values())


def _int_not_representable(x: np.ndarray, ok: np.ndarray, fmt: IntFormat, name: str) -> ValueError:
    i = _first(~ok)
    v = float(x.reshape(-1)[i])
    return ValueError(f"{name}[{_index_str(i, x.shape)}] = {v!r} is not representable in {fmt.name}: expected "
                      f"{fmt.range_text()} (no rounding or wrapping is applied; convert the data yourself, e.g. "
                      f"numpy.clip(numpy.rint({name}), {fmt.min}, {fmt.max}))")


def _int_representable(arr: np.ndarray, fmt: IntFormat) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.isfinite(arr) & (arr == np.trunc(arr)) & (arr >= fmt.min) & (arr <= fmt.max)


# --------------------------------------------------------------------- rounding
# Overflow behaviour codes passed to the kernel.
_OVF_INF, _OVF_NAN, _OVF_SAT = 0, 1, 2


@numba.njit(cache=True, inline="always")
def _rounds_up(mode, above_half, at_half, odd, neg, stochastic_up):
    """Whether a magnitude with a nonzero discarded part rounds up (away from zero) in
    ``mode`` (:data:`ROUNDING_CODES`): the one rounding-mode rule both rounding paths
    ask, given whether the discarded part is above or at half a quantum, whether the kept
    last bit is odd, the sign, and the stochastic draw's verdict (``sr``)."""
    if mode == RNE:
        return above_half or (at_half and odd)
    if mode == RNA:
        return above_half or at_half
    if mode == RNZ:
        return above_half
    if mode == RZ:
        return False
    if mode == RD:
        return neg
    if mode == RU:
        return not neg
    if mode == RA:
        return True
    if mode == RO:
        return not odd
    return stochastic_up


@numba.njit(cache=True, inline="always")
def _round_one(x, p, emin, emax_q, max_sig, mode, sub, ovf, sat, ufl_min, u):
    """Round one finite nonzero-or-zero float64 to the format; see round()."""
    a = abs(x)
    neg = x < 0.0 or (x == 0.0 and math.copysign(1.0, x) < 0.0)
    if a == 0.0:
        r = 0.0
    else:
        m, ex = math.frexp(a)  # a = m * 2**ex, m in [0.5, 1)
        e = ex - 1
        if e >= emin:
            qe = e - (p - 1)
        elif sub:
            qe = emin - (p - 1)
        else:
            qe = emin  # no subnormals: round within {0, 2**emin}
        s = math.ldexp(a, -qe)  # exact: at most 53 significant bits
        fl = math.floor(s)
        f = s - fl
        up = f != 0.0 and _rounds_up(mode, f > 0.5, f == 0.5, (fl % 2.0) == 1.0, neg, u < f)
        sig = fl + 1.0 if up else fl
        if sig == 0.0 and ufl_min:
            sig = 1.0  # format without zero (E8M0): smallest value instead
        r = math.ldexp(sig, qe)
        # overflow: compare the significand at the format's top exponent
        if r > math.ldexp(max_sig, emax_q):
            toward_zero = mode == RZ or mode == RO or (mode == RD and not neg) or (mode == RU and neg)
            if sat or toward_zero or ovf == _OVF_SAT:
                r = math.ldexp(max_sig, emax_q)
            elif ovf == _OVF_INF:
                r = math.inf
            else:
                return math.nan
    return -r if neg else r


_ABS_MASK = np.int64(0x7FFFFFFFFFFFFFFF)
_MANT_MASK = np.int64(0x000FFFFFFFFFFFFF)


@numba.njit(cache=True, inline="always")
def _round_bits_fast(ab, p, emin, mode, sub, neg, u):
    """Integer fast path on the bits ``ab`` of a positive normal float64.

    Returns the bits of the rounded magnitude, or -1 when the value needs the
    general path (its quantum is above its leading bit, or the format has no
    subnormals below emin).  Dropping the low ``d`` bits of the float64 pattern
    truncates to a multiple of the format's quantum; adding ``1 << d`` adds one
    quantum, the carry running into the exponent field exactly.
    """
    e = (ab >> 52) - 1023
    d = 53 - p
    if e < emin:
        if not sub:
            return -1
        d += emin - e
        if d > 52:
            return -1
    if d <= 0:
        return ab
    low = ab & ((np.int64(1) << d) - 1)
    if low == 0:
        return ab
    half = np.int64(1) << (d - 1)
    odd = True if d == 52 else ((ab >> d) & 1) == 1
    up = _rounds_up(mode, low > half, low == half, odd, neg, u * (np.int64(1) << d) < low)
    t = ab - low
    return t + (np.int64(1) << d) if up else t


@numba.njit(cache=True)
def _round_kernel(x, out, p, emin, emax_q, max_sig, mode, sub, ovf, sat, ufl_min, nozero_sign, rand):
    """Round ``x`` into ``out`` (float64 arrays); see :func:`round` for the parameters."""
    _round_kernel_views(x, x.view(np.int64), out, out.view(np.int64), p, emin, emax_q, max_sig, mode,
                        sub, ovf, sat, ufl_min, nozero_sign, rand)


#: Elements per task of :func:`_round_kernel_views` (a branch-free pass, then its exceptions).
_ROUND_CHUNK = 4096


@numba.njit(cache=True, inline="always")
def _mode_increments(mode):
    """The rounding mode as the coefficients :func:`_round_bits_vector` combines without
    branches: ``(half, minus_one, last_bit, mask_if_negative, mask_if_positive, odd)``.
    The increment added below the quantum is ``half * h - m + last_bit * l`` plus the
    whole mask on the side the mode rounds away from zero; round to odd sets the last
    bit of an inexact result instead."""
    if mode == RNE:
        return 1, 1, 1, 0, 0, 0
    if mode == RNA:
        return 1, 0, 0, 0, 0, 0
    if mode == RNZ:
        return 1, 1, 0, 0, 0, 0
    if mode == RD:
        return 0, 0, 0, 1, 0, 0
    if mode == RU:
        return 0, 0, 0, 0, 1, 0
    if mode == RA:
        return 0, 0, 0, 1, 1, 0
    if mode == RO:
        return 0, 0, 0, 0, 0, 1
    return 0, 0, 0, 0, 0, 0     # RZ (and SR, which the vectorised pass leaves)


@numba.njit(cache=True, inline="always")
def _round_bits_vector(ab, p, emin, neg, h, m1, lb, away_neg, away_pos, odd, normal_ok, largest_bits):
    """:func:`_round_bits_fast` without branches, and more,
    for the vectorised pass: ``(bits, ok)``, ``bits`` the rounded magnitude where
    ``ok``.  The rounding adds an increment below the quantum (:func:`_mode_increments`;
    ties to even: half - 1 plus the last kept bit) and clears the bits under it, the
    carry running into the exponent field; a value a whole quantum or more below the
    smallest subnormal becomes 0 or that quantum (at half of it only when its
    significand is 1); a zero stays.  ``ok`` is False for what the element-wise path
    handles: float64 subnormals, Inf/NaN, values below emin in a format without
    subnormals, stochastic rounding and overflow (``normal_ok`` bit 0: subnormals,
    bit 1: not SR, bit 2: zero allowed)."""
    expf = ab >> 52
    e = expf - 1023
    under = emin - e
    d = 53 - p + (under if under > 0 else 0)
    dc = d if d > 0 else 0
    dc = dc if dc < 52 else 52
    one = np.int64(1)
    mask = (one << dc) - 1
    half = (one << dc) >> 1
    lsb = ((ab >> dc) & 1) | (1 if dc == 52 else 0)   # at d = 52 the kept bit is the implicit one
    low = ab & mask
    away = away_neg if neg else away_pos
    inc = h * half - m1 + lb * lsb + away * mask
    inc = inc if dc > 0 else np.int64(0)
    rb = (ab + inc) & ~mask
    rb = rb | ((one << dc) if (odd != 0) & (low != 0) & (dc < 52) else np.int64(0))   # at 52 odd already
    mant_zero = (ab & _MANT_MASK) == 0
    # below the smallest quantum: up past half (ties: to even 0, away for RNA), always (RA, RO) or by sign
    up_below = (d == 53) & ((h != 0) & ((not mant_zero) | (m1 == 0))) | (away != 0) | (odd != 0)
    qe = emin - p + 1
    rb = (np.int64(qe + 1023) << 52 if up_below else np.int64(0)) if d > 52 else rb
    zero = ab == 0
    rb = np.int64(0) if zero else rb
    sub = (normal_ok & 1) != 0
    normal = (expf != 0) & (expf != 2047) & ((under <= 0) | sub) & ((d <= 52) | (qe >= -1022))
    ok = (normal | (zero & ((normal_ok & 4) != 0))) & ((normal_ok & 2) != 0) & (rb <= largest_bits)
    return rb, ok


@numba.njit(cache=True, inline="always")
def _round_chunk(x, xb, out, ob, lo, hi, p, emin, emax_q, max_sig, mode, sub, ovf, sat, ufl_min, nozero_sign, rand,
                 largest, largest_bits, h, m1, lb, away_neg, away_pos, odd, flags, sign_of_zero):
    """Round elements ``lo .. hi - 1`` of ``x`` (bits ``xb``) into ``out`` (bits ``ob``): a
    branch-free pass that vectorises, then the elements it left, one by one."""
    exceptions = 0
    for i in range(lo, hi):        # branch-free: vectorises
        ui = np.uint64(i)          # unsigned: no wraparound test (twice as fast)
        bits = xb[ui]
        rb, ok = _round_bits_vector(bits & _ABS_MASK, p, emin, bits < 0, h, m1, lb, away_neg, away_pos, odd,
                                    flags, largest_bits)
        ob[ui] = rb | (bits & (~_ABS_MASK if rb != 0 else sign_of_zero))
        exceptions += 0 if ok else 1
    if exceptions == 0:
        return
    for i in range(lo, hi):        # the elements the pass left, one by one
        bits = xb[i]
        ab = bits & _ABS_MASK
        if _round_bits_vector(ab, p, emin, bits < 0, h, m1, lb, away_neg, away_pos, odd, flags,
                              largest_bits)[1]:
            continue
        u = rand[i] if rand.size > 0 else 0.0
        expf = ab >> 52
        rb = np.int64(-1)
        if expf != 0 and expf != 2047:
            rb = _round_bits_fast(ab, p, emin, mode, sub, bits < 0, u)
        elif ab == 0 and not ufl_min:      # a zero stays (+0 in formats without -0)
            rb = np.int64(0)
        if rb >= 0 and rb <= largest_bits:
            ob[i] = rb | (bits & ~_ABS_MASK) if (rb != 0 or not nozero_sign) else np.int64(0)
        else:
            out[i] = _round_special_or_general(x[i], p, emin, emax_q, max_sig, largest, mode, sub, ovf,
                                               sat, ufl_min, nozero_sign, u)


@numba.njit(cache=True, inline="always")
def _chunk_constants(mode, sub, ufl_min, nozero_sign, max_sig, emax_q):
    """What every chunk of a rounding reads: the largest value and its bits, the mode's
    increments (:func:`_mode_increments`), the flags of :func:`_round_bits_vector` and the
    sign a zero keeps."""
    largest = math.ldexp(max_sig, emax_q)
    h, m1, lb, away_neg, away_pos, odd = _mode_increments(mode)
    flags = (1 if sub else 0) | (2 if mode != SR else 0) | (0 if ufl_min else 4)
    sign_of_zero = np.int64(0) if nozero_sign else ~_ABS_MASK
    return largest, _float_bits(largest), h, m1, lb, away_neg, away_pos, odd, flags, sign_of_zero


@numba.njit(cache=True, parallel=True)
def _round_kernel_views(x, xb, out, ob, p, emin, emax_q, max_sig, mode, sub, ovf, sat, ufl_min,
                        nozero_sign, rand):
    largest, largest_bits, h, m1, lb, away_neg, away_pos, odd, flags, sign_of_zero = _chunk_constants(
        mode, sub, ufl_min, nozero_sign, max_sig, emax_q)     # positive floats order like their bit patterns
    n = x.size
    for c in numba.prange((n + _ROUND_CHUNK - 1) // _ROUND_CHUNK):
        _round_chunk(x, xb, out, ob, c * _ROUND_CHUNK, min(n, (c + 1) * _ROUND_CHUNK), p, emin, emax_q, max_sig,
                     mode, sub, ovf, sat, ufl_min, nozero_sign, rand, largest, largest_bits, h, m1, lb, away_neg,
                     away_pos, odd, flags, sign_of_zero)


@numba.njit(cache=True)
def _float_bits(v):
    a = np.empty(1)
    a[0] = v
    return a.view(np.int64)[0]


@numba.njit(cache=True)
def _round_special_or_general(v, p, emin, emax_q, max_sig, largest, mode, sub, ovf, sat, ufl_min,
                              nozero_sign, u):
    if math.isnan(v):
        return v
    if math.isinf(v):
        if sat or ovf == _OVF_SAT:
            return math.copysign(largest, v)
        return v if ovf == _OVF_INF else math.nan
    r = _round_one(v, p, emin, emax_q, max_sig, mode, sub, ovf, sat, ufl_min, u)
    if nozero_sign and r == 0.0:
        r = 0.0
    return r


def round(  # noqa: A001 - public API name
    x: np.typing.ArrayLike,
    fmt: str | FloatFormat,
    mode: str = "rne",
    *,
    rng: np.random.Generator | int | None = None,
    subnormals: bool = True,
    saturate: bool = False,
) -> np.ndarray:
    """Round float64 values to the nearest values of ``fmt`` in a given mode.

    Parameters
    ----------
    x:
        Array-like of real numbers; converted to float64 (a ValueError is raised if
        that conversion would itself round, e.g. for Python ints above 2**53).
    fmt:
        Target format (name or :class:`FloatFormat`).
    mode:
        One of :data:`ROUNDING_MODES`: ``rne`` (default), ``rna``, ``rnz``, ``rz``,
        ``rd``, ``ru``, ``ra``, ``ro``, ``sr``.
    rng:
        numpy Generator (or an int seed for ``numpy.random.default_rng``) for
        ``mode="sr"`` (required there, rejected otherwise).
    subnormals:
        If False, values below the smallest normal are rounded within
        ``{0, 2**emin}`` in the same mode, as CPFloat does for formats without
        subnormals.
    saturate:
        Clamp overflows (and infinities) to the largest finite value instead of
        the format's convention.

    Returns
    -------
    numpy.ndarray of float64, same shape, every element representable in ``fmt``.

    Overflow follows IEEE 754 with unbounded-exponent rounding: modes that round
    toward zero for the value's sign (``rz``, ``ro``, ``rd`` for positives, ``ru``
    for negatives) give the largest finite value; the others give Inf for
    ``"ieee"`` formats, NaN for ``"fn"``/``"fnuz"`` formats (OCP non-saturating
    conversion) and the largest finite value for ``"none"`` formats (FP6/FP4 have
    nothing else).  NaN stays NaN.  Formats without a NaN (FP6/FP4) reject NaN
    inputs and, unless ``saturate=True``, infinite ones.  ``"fnuz"`` formats have no
    -0: negative values that round to zero give +0.  Unsigned formats reject
    negative inputs; E8M0 has no zero and rejects it.
    """
    fmt = format(fmt)
    if mode not in ROUNDING_CODES:
        raise unknown_name("rounding mode", mode, ROUNDING_MODES)
    arr = real_array(x, "x")
    flat = np.ascontiguousarray(arr).reshape(-1)
    _check_domain(flat, fmt, saturate)
    if mode == "sr":
        if rng is None:
            raise ValueError("mode='sr' needs rng=numpy.random.Generator (or an int seed) for its random numbers")
        if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
            rng = np.random.default_rng(int(rng))
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng={rng!r} ({type(rng).__name__}); expected a numpy.random.Generator or an int seed")
        rand = rng.random(flat.size)
    else:
        if rng is not None:
            raise ValueError(f"rng is only used by mode='sr', not mode={mode!r}")
        rand = np.empty(0)
    if fmt.special == "ieee":
        ovf = _OVF_INF
    elif fmt.special == "none":
        ovf = _OVF_SAT
    else:
        ovf = _OVF_NAN
    out = np.empty_like(flat)
    with threads_for(flat.size):
        _round_kernel(
            flat, out, fmt.p, fmt.emin, fmt.emax - fmt.man_bits, float(fmt.max_significand),
            ROUNDING_CODES[mode], bool(subnormals and fmt.subnormals), ovf, bool(saturate),
            not fmt.has_zero, not fmt.has_negative_zero, rand,
        )
    return out.reshape(arr.shape)


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask.reshape(-1))[0])


def _index_str(flat_index: int, shape: tuple[int, ...]) -> str:
    if len(shape) <= 1:
        return str(flat_index)
    return ", ".join(str(int(i)) for i in np.unravel_index(flat_index, shape))


def _check_domain(flat: np.ndarray, fmt: FloatFormat, saturate: bool) -> None:
    """Reject inputs the format cannot receive whatever the rounding."""
    if fmt.special == "none":
        bad = np.isnan(flat) | (np.isinf(flat) & (not saturate))
        if bad.any():
            i = _first(bad)
            raise ValueError(
                f"x[{i}] = {float(flat[i])!r} cannot be rounded to {fmt.name}, which has no Inf or NaN"
                + ("" if np.isnan(flat[i]) else "; pass saturate=True to clamp infinities")
            )
    if not fmt.signed:
        bad = flat < 0
        if bad.any():
            i = _first(bad)
            raise ValueError(f"x[{i}] = {float(flat[i])!r} is negative; {fmt.name} is an unsigned format")
    if not fmt.has_zero:
        bad = flat == 0
        if bad.any():
            i = _first(bad)
            raise ValueError(f"x[{i}] = {float(flat[i])!r}: {fmt.name} has no zero")


# ------------------------------------------------------------ what a rounding did
@numba.njit(cache=True, inline="always")
def _count_chunk(x, q, lo, hi, min_normal, largest):
    """(changed, underflowed, subnormal, overflowed, saturated) over elements lo .. hi - 1
    of ``q`` = ``x`` rounded (flat float64 arrays)."""
    changed = underflowed = subnormal = overflowed = saturated = 0
    for i in range(lo, hi):
        ui = np.uint64(i)          # unsigned: no wraparound test, the loop vectorises
        v, r = x[ui], q[ui]
        nan = v != v
        finite = not nan and abs(v) != np.inf
        changed += 1 if r != v and not nan else 0
        underflowed += 1 if r == 0 and v != 0 and not nan else 0
        subnormal += 1 if r != 0 and abs(r) < min_normal else 0
        overflowed += 1 if finite and (r != r or abs(r) == np.inf) else 0
        saturated += 1 if finite and abs(v) > largest else 0
    return changed, underflowed, subnormal, overflowed, saturated


@numba.njit(cache=True)
def _rounding_counts_kernel(x, q, min_normal, largest):
    return _count_chunk(x, q, 0, x.size, min_normal, largest)


@numba.njit(cache=True, parallel=True)
def _round_counted_kernel(x, scale, factors, rows, cols, scaled, out, p, emin, emax_q, max_sig, mode, sub, ovf, sat,
                          ufl_min, nozero_sign, min_normal, largest_finite):
    """:func:`round_counted` in one parallel pass over chunks of whole rows (about
    :data:`_ROUND_CHUNK` elements): each chunk scaled where ``scale`` (``scaled = x *
    factors[i // rows, j // cols]``, powers of two; otherwise ``scaled`` is ``x``), rounded
    (:func:`_round_chunk`) and counted (:func:`_count_chunk`); the five counts summed."""
    largest, largest_bits, h, m1, lb, away_neg, away_pos, odd, flags, sign_of_zero = _chunk_constants(
        mode, sub, ufl_min, nozero_sign, max_sig, emax_q)
    nrows, ncols = x.shape
    xs, sc, ou = x.reshape(-1), scaled.reshape(-1), out.reshape(-1)
    scb, oub = sc.view(np.int64), ou.view(np.int64)
    rand = np.empty(0)
    col_block = np.arange(ncols) // cols
    per = max(1, _ROUND_CHUNK // max(ncols, 1))          # whole rows per chunk
    chunks = (nrows + per - 1) // per
    part = np.zeros((chunks, 5), dtype=np.int64)
    for c in numba.prange(chunks):
        r0, r1 = c * per, min(nrows, (c + 1) * per)
        lo, hi = r0 * ncols, r1 * ncols
        for i in range(r0, r1 if scale else r0):
            f = factors[i // rows]
            base = np.uint64(i * ncols)
            for j in range(ncols):
                uj = np.uint64(j)      # unsigned: no wraparound test, the loop vectorises
                sc[base + uj] = xs[base + uj] * f[col_block[uj]]
        _round_chunk(sc, scb, ou, oub, lo, hi, p, emin, emax_q, max_sig, mode, sub, ovf, sat, ufl_min, nozero_sign,
                     rand, largest, largest_bits, h, m1, lb, away_neg, away_pos, odd, flags, sign_of_zero)
        counts = _count_chunk(sc, ou, lo, hi, min_normal, largest_finite)
        for k in range(5):
            part[c, k] = counts[k]
    total = part.sum(axis=0)
    return total[0], total[1], total[2], total[3], total[4]


def round_counted(x: np.ndarray, fmt: str | FloatFormat, mode: str = "rne", *, exponents: np.ndarray | None = None,
                  block: tuple[int, int] = (1, 1),
                  saturate: bool = False) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int, int, int]]:
    """A 2-D float64 ``x`` divided by a power-of-two scale per block, rounded to ``fmt``,
    and what the rounding did, in one compiled call (the quantisation of
    :mod:`workbench.torch`): ``(scaled, q, counts)`` with ``scaled = x / 2**e`` (``e`` =
    ``exponents[i // block[0], j // block[1]]``; None: no scaling, ``scaled`` is ``x``), ``q =
    round(scaled, fmt, mode, saturate=saturate)`` (a deterministic mode) and ``counts =
    rounding_counts(scaled, q, fmt)``, bit for bit.  The division is a multiplication
    by the exact power of two 2**-e, which is ``ldexp``'s rounding for every float64
    (|e| <= 1022 is required, a ValueError otherwise)."""
    f = format(fmt)
    if mode not in ROUNDING_CODES or mode == "sr":
        raise unknown_name("deterministic rounding mode", mode, [m for m in ROUNDING_MODES if m != "sr"])
    arr = np.ascontiguousarray(real_array(x, "x"))
    if arr.ndim != 2:
        raise ValueError(f"x has shape {arr.shape}; expected a 2-D array")
    rows, cols = block
    e = np.zeros((1, 1), dtype=np.int64) if exponents is None else np.asarray(exponents)
    need = (-(-arr.shape[0] // rows), -(-arr.shape[1] // cols))
    if exponents is not None and (e.ndim != 2 or e.shape[0] < need[0] or e.shape[1] < need[1]
                                  or (e.size and np.abs(e).max() > 1022)):
        raise ValueError(f"exponents of shape {e.shape} (largest magnitude {np.abs(e).max() if e.size else 0}): "
                         f"expected integers of magnitude at most 1022, one per block of {block} of the "
                         f"{arr.shape} x, at least {need}")
    flat = arr.reshape(-1)
    _check_domain(flat, f, saturate)
    ovf = _OVF_INF if f.special == "ieee" else _OVF_SAT if f.special == "none" else _OVF_NAN
    scaled, out = arr if exponents is None else np.empty_like(arr), np.empty_like(arr)
    with threads_for(flat.size):
        counts = _round_counted_kernel(arr, exponents is not None, np.ldexp(1.0, -e.astype(np.int64)), rows, cols,
                                       scaled, out, f.p, f.emin,
                                       f.emax - f.man_bits, float(f.max_significand), ROUNDING_CODES[mode],
                                       bool(f.subnormals), ovf, bool(saturate), not f.has_zero,
                                       not f.has_negative_zero, f.min_normal, f.max)
    return scaled, out, tuple(int(c) for c in counts)  # type: ignore[return-value]


def rounding_counts(x: np.typing.ArrayLike, q: np.typing.ArrayLike,
                    fmt: str | FloatFormat) -> tuple[int, int, int, int, int]:
    """What rounding ``x`` to ``q = round(x, fmt, ...)`` did, counted in one compiled pass over
    both arrays (the quantisation statistics of :mod:`workbench.torch`'s records):
    ``(changed, underflowed, subnormal, overflowed, saturated)`` = how many values changed
    (NaN inputs are not counted), how many nonzero values became zero, how many results are
    nonzero and below ``fmt``'s smallest normal, how many finite values became Inf or NaN,
    and how many finite values lay beyond ``fmt``'s largest finite value (whether the
    rounding saturated them or overflowed)."""
    f = format(fmt)
    xs = np.asarray(x, dtype=np.float64).reshape(-1)
    qs = np.asarray(q, dtype=np.float64).reshape(-1)
    if xs.shape != qs.shape:
        raise ValueError(f"x has {xs.size} values and q {qs.size}: q must be x rounded, value for value")
    counts = _rounding_counts_kernel(xs, qs, f.min_normal, f.max)
    return tuple(int(c) for c in counts)  # type: ignore[return-value]


# ------------------------------------------------------------ representability
def is_representable(x: np.typing.ArrayLike, fmt: str | FloatFormat | IntFormat) -> np.ndarray:
    """Elementwise: is the value exactly a value of ``fmt``?

    NaN counts when the format has a NaN, +-Inf when it has infinities.  -0.0 counts
    as zero in every format that has a zero (formats without -0 store it as +0).  For an
    integer format (:class:`IntFormat`): an integer in ``[fmt.min, fmt.max]``.
    """
    nf = number_format(fmt)
    arr = real_array(x, "x")
    if isinstance(nf, IntFormat):
        return _int_representable(arr, nf)
    fmt = nf
    if fmt.numpy_dtype is not None and fmt.subnormals:   # fp16/32/64: the dtype holds exactly its values
        with np.errstate(over="ignore"):
            return (arr.astype(fmt.numpy_dtype).astype(np.float64) == arr) | np.isnan(arr)
    flat = arr.reshape(-1)
    ok = np.isfinite(flat)
    if not fmt.signed:
        ok &= ~(flat < 0)
    if not fmt.has_zero:
        ok &= flat != 0
    if ok.any():
        vals = np.where(ok, flat, 1.0)
        r = np.empty_like(vals)
        with threads_for(vals.size):
            _round_kernel(
                vals, r, fmt.p, fmt.emin, fmt.emax - fmt.man_bits, float(fmt.max_significand),
                ROUNDING_CODES["rz"], fmt.subnormals, _OVF_SAT, True, not fmt.has_zero, False, np.empty(0),
            )
        ok &= (r == vals) & (np.abs(vals) <= fmt.max)
    if fmt.has_nan:
        ok |= np.isnan(flat)
    if fmt.has_inf:
        ok |= np.isinf(flat)
    return ok.reshape(arr.shape)


def check_representable(x: np.typing.ArrayLike, fmt: str | FloatFormat | IntFormat, name: str = "x") -> np.ndarray:
    """Return ``x`` as float64 if every value is representable in ``fmt``.

    Otherwise raise a ValueError naming the array, the first offending index and
    value, the format, and the nearest representable values around it (for an integer
    format, :class:`IntFormat`, the range of integers it expected).
    """
    nf = number_format(fmt)
    arr = real_array(x, name)
    if isinstance(nf, IntFormat):
        ok = _int_representable(arr, nf)
        if not ok.all():
            raise _int_not_representable(arr, ok, nf, name)
        return arr
    fmt = nf
    ok = is_representable(arr, fmt)
    if not ok.all():
        raise not_representable_error(arr, _first(~ok), fmt, name)
    return arr


def not_representable_error(x: np.ndarray, flat_index: int, fmt: FloatFormat, name: str) -> ValueError:
    """The ValueError of :func:`check_representable` for the value at ``flat_index``
    (C order) of ``x``, known not to be representable in ``fmt``: it names the array,
    the position, the value, the format and the nearest representable values."""
    v = float(x.reshape(-1)[flat_index])
    hint = ""
    if np.isfinite(v) and (fmt.signed or v > 0) and (fmt.has_zero or v != 0):
        lo = round(np.array([v]), fmt, "rd", saturate=True)[0]
        hi = round(np.array([v]), fmt, "ru", saturate=True)[0]
        hint = f" (neighbours in {fmt.name}: {float(lo)!r} and {float(hi)!r})"
    elif np.isnan(v) or np.isinf(v):
        missing = [w for w, has in (("Inf", fmt.has_inf), ("NaN", fmt.has_nan)) if not has]
        hint = f" ({fmt.name} has no {' or '.join(missing)})"
    return ValueError(
        f"{name}[{_index_str(flat_index, x.shape)}] = {v!r} is not representable in {fmt.name}{hint}; "
        f"round it first, e.g. workbench.round({name}, {fmt.name!r})"
    )


# ------------------------------------------------------------------------ bits
def to_bits(x: np.typing.ArrayLike, fmt: str | FloatFormat) -> np.ndarray:
    """Bit patterns of values representable in ``fmt``, as unsigned integers.

    Values must be representable (see :func:`check_representable`).  NaN encodes
    as the format's canonical NaN (IEEE: quiet NaN ``0 11..1 10..0`` with the
    input's sign; "fn": all ones; "fnuz": ``0x80``).  Arrays of float16/float32/
    float64 whose dtype *is* the format are viewed directly, so NaN payloads survive.
    """
    fmt = format(fmt)
    native = fmt.numpy_dtype
    arr_in = np.asarray(x)
    if native is not None and arr_in.dtype == native:
        return arr_in.view(fmt.bits_dtype).copy()
    arr = check_representable(arr_in, fmt, "x")
    flat = arr.reshape(-1)
    sign = np.signbit(flat) & fmt.has_negative_zero | (flat < 0)
    a = np.abs(flat)
    finite = np.isfinite(a)
    av = np.where(finite & (a > 0), a, 1.0)
    _, ex = np.frexp(av)
    e = ex.astype(np.int64) - 1
    normal = finite & (a >= fmt.min_normal)
    field_e = np.where(normal, e + fmt.bias, 0)
    qe = np.where(normal, e, fmt.emin) - fmt.man_bits
    sig = np.ldexp(np.where(finite, a, 0.0), -qe).astype(np.int64)
    man = np.where(normal, sig - (1 << fmt.man_bits), sig)
    if not fmt.subnormals:  # exponent-only: the zero field is 2**-bias
        field_e = e + fmt.bias
        man = np.zeros_like(man)
    man = np.where(finite & (a > 0), man, 0)
    field_e = np.where(finite & (a > 0), field_e, 0)
    bits = (field_e.astype(np.uint64) << np.uint64(fmt.man_bits)) | man.astype(np.uint64)
    if fmt.signed:
        bits |= sign.astype(np.uint64) << np.uint64(fmt.exp_bits + fmt.man_bits)
    all_exp = np.uint64(((1 << fmt.exp_bits) - 1) << fmt.man_bits)
    nan = np.isnan(flat)
    if fmt.special == "ieee":
        inf = np.isinf(flat)
        quiet = np.uint64(1 << (fmt.man_bits - 1)) if fmt.man_bits else np.uint64(0)
        signbit = np.uint64(1 << (fmt.width - 1))
        bits = np.where(inf, all_exp | np.where(sign, signbit, np.uint64(0)), bits)
        bits = np.where(nan, all_exp | quiet | np.where(np.signbit(flat), signbit, np.uint64(0)), bits)
    elif fmt.special == "fn":
        bits = np.where(nan, np.uint64((1 << (fmt.exp_bits + fmt.man_bits)) - 1), bits)
    elif fmt.special == "fnuz":
        bits = np.where(nan, np.uint64(1 << (fmt.width - 1)), bits)
    return bits.astype(fmt.bits_dtype).reshape(arr.shape)


def from_bits(bits: np.typing.ArrayLike, fmt: str | FloatFormat) -> np.ndarray:
    """Values (float64) of bit patterns of ``fmt``; the inverse of :func:`to_bits`."""
    fmt = format(fmt)
    b_in = np.asarray(bits)
    if b_in.dtype.kind not in "iu":
        raise TypeError(f"bits must be an integer array, got dtype {b_in.dtype}")
    if b_in.size and (b_in.min() < 0 or int(b_in.max()) >> fmt.width):
        flat = b_in.reshape(-1)
        bad = (flat < 0) | (flat.astype(np.uint64) >> np.uint64(fmt.width) != 0)
        i = _first(bad)
        raise ValueError(
            f"bits[{_index_str(i, b_in.shape)}] = {int(flat[i]):#x} is not a {fmt.width}-bit pattern of {fmt.name}"
        )
    b = b_in.astype(np.uint64).reshape(-1)
    mb = np.uint64(fmt.man_bits)
    man = (b & np.uint64((1 << fmt.man_bits) - 1)).astype(np.int64)
    fe = ((b >> mb) & np.uint64((1 << fmt.exp_bits) - 1)).astype(np.int64)
    neg = ((b >> np.uint64(fmt.exp_bits + fmt.man_bits)) & np.uint64(1)).astype(bool) if fmt.signed else np.zeros(b.shape, bool)
    if fmt.subnormals:
        sig = np.where(fe == 0, man, man + (1 << fmt.man_bits)).astype(np.float64)
        exp = np.where(fe == 0, fmt.emin, fe - fmt.bias) - fmt.man_bits
    else:
        sig = np.ones(b.shape)
        exp = fe - fmt.bias
    with np.errstate(over="ignore"):  # Inf/NaN fields overflow here and are replaced below
        val = np.ldexp(sig, exp)
    top = (1 << fmt.exp_bits) - 1
    if fmt.special == "ieee":
        val = np.where((fe == top) & (man == 0), np.inf, val)
        val = np.where((fe == top) & (man != 0), np.nan, val)
    elif fmt.special == "fn":
        val = np.where((fe == top) & (man == (1 << fmt.man_bits) - 1), np.nan, val)
    elif fmt.special == "fnuz":
        val = np.where(neg & (fe == 0) & (man == 0), np.nan, val)
    val = np.where(neg, -val, val)
    return val.reshape(b_in.shape)
