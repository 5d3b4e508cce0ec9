"""The arithmetic description of one matrix-unit instruction: :class:`Model`.

A model says *what arithmetic* a matrix multiply-accumulate unit does, never which
device it belongs to (that is :mod:`workbench.units.catalogue`'s business).  The names of
the parameters follow the papers and are a contract shared with the probes, which
return inferred models as ``.params`` dictionaries with these keys:

``kind``
    The elementary operation (Xie et al. 2025, Section 4.1, Table 1):
    ``"t-fdpa"`` truncated fused dot-product-add (Algorithm 7; also Khattak &
    Mikaitis' generic block FMA, Section IV-C), ``"fma"`` chain of IEEE FMAs
    (Algorithm 4), ``"e-fdpa"`` exact FDPA rounded once (Algorithm 6),
    ``"ftz-addmul"`` pairwise flush-to-zero adds and multiplies (Algorithms 1-2),
    ``"tr-fdpa"`` / ``"gtr-fdpa"`` AMD CDNA3 truncated-rounded FDPA (Algorithms 10-11),
    ``"st-fdpa"`` block-scaled T-FDPA for MX formats (Algorithm 8), ``"gst-fdpa"``
    group-scaled T-FDPA for NVFP4/MXFP4 (Algorithm 9).  Beyond the paper: ``"pair-dot"``
    (the CPU bf16 pair units) and ``"int-mma"`` (integer units: exact products, int32
    accumulator wrapping or saturating; :mod:`workbench.engine.operations.int_mma`).
``in_format``, ``out_format``
    Formats of A/B and of C/D (names from :mod:`workbench.numbers.formats`; the integer kinds
    name integer formats, ``"s8"``, ``"u8"``, ``"s32"``).
``L``
    Block size: products consumed by one fused operation (Khattak-Mikaitis' NFMA,
    Xie's L_max).  K is consumed in blocks of L, each result feeding the next as c.
``F``
    Fractional bits kept when the terms are aligned at the largest exponent (the
    products are unnormalised, significand in [0, 4)).  Khattak-Mikaitis write this as
    ``F = out_precision - 1 + neab``: F = 23 + neab for fp32 output.
``rounding``
    Final conversion of the fused sum: ``"rz"``, ``"rne"``, ``"rd"``, ``"ru"``
    (Khattak-Mikaitis' ``frmode``; Xie's rho).
``result_format``
    Precision the fused sum is rounded to before it is stored in ``out_format``
    (``"e8m13"`` for the RZ-E8M13 of Ada/Hopper fp8, Xie Table 2); default
    ``out_format``.
``sticky``
    Append one sticky bit below the F aligned bits of each term (the OR of the bits
    that fell off), as Khattak-Mikaitis' ``stkbitenabled``.
``c_position``
    ``"early"``: c is a term of the fused sum (Xie Algorithm 7).  ``"late"``: the
    block sums the products only and c is added afterwards with its own rounding
    ``late_rounding`` (Khattak-Mikaitis Table II, fp8 through ``mma.sync``).
``late_rounding``
    Rounding of the late addition of c (default ``"rne"``).
``zero_exponent``
    Exponent that zero products (and a zero c) carry into the alignment: the window
    is set by the largest exponent, so this changes results (MMA-Sim: -131/-132/-133
    for fp32 output and -19/-20/-21 for fp16 output).  ``None``: zeros do not take
    part in the maximum (the MATLAB toolbox's V100 model).
``interleave``
    Number of interleaved groups a block is split into, by pairs of consecutive
    elements (1 = none).  ``2`` with ``L=32`` is the fp8 ``mma.sync`` pattern of
    H100/H200/B200 (Khattak-Mikaitis Section IV-A5, Fig. 5c): elements 0,1,4,5,...
    form group 0 and 2,3,6,7,... group 1; the groups are fused sums of L/2 products
    chained in that order starting from 0, and c is added late.
``group_F``
    Fractional bits of each interleaved group's fused sum (default ``F``).
``P``
    FTZ-AddMul order (Xie Algorithm 2): 2 or 4 products summed pairwise.
``F2``
    TR-FDPA / GTR-FDPA: fractional bits of the rounded-down two-term sum
    (Xie Algorithms 10-11, Table 7).
``alignment_rounding``
    TR-FDPA / GTR-FDPA: direction in which the terms are cut when they are
    re-aligned at a common exponent after the truncated fused sums - T to F2 and c to
    F fractional bits at E (Xie Algorithm 10 lines 14-15, Algorithm 11 lines 22-23)
    and GTR-FDPA's two group sums to F bits at e_max (Algorithm 11 lines 15-16).
    ``"rd"`` (round down, toward -inf) is what CDNA3 does (MMA-Sim Section 6.2.4) and
    the default of these kinds; ``"rz"`` (toward zero) is the hypothetical
    round-toward-zero twin of MMA-Sim Figure 3 (``Phi'_TR-FDPA``), whose errors are
    sign-symmetric.  The first alignment of the products (Algorithm 10 line 8,
    Algorithm 11 lines 9-10) is always RZ_F.  Other kinds have no such step: ``None``.
``k_block``, ``G``
    Scaled operations: elements sharing one scale factor (32 for MX, 16 for NVFP4)
    and the group size of GST-FDPA's exact per-group dot products (Xie Algorithm 9).
``scale_format``
    Format of the scale factors of scaled operations (``"e8m0"`` or ``"ue4m3"``).
``flush_subnormals``
    Inputs subnormal in their format are flushed to +0 (AMD CDNA2, Xie Algorithm 2).
``flush_output_subnormals``
    Subnormal results (and intermediate FTZ-Add/FTZ-Mul results) flush to zero.
``pair_rule``
    ``"pair-dot"`` (the CPU bf16 pair units): what one instruction does with its pairs
    of bf16 products and c - ``"x86-fma"`` (VDPBF16PS), ``"x86-even-odd"``
    (TDPBF16PS), ``"arm-odd"`` (BFDOT/BFMMLA, FPCR.EBF = 0), ``"arm-fused"``
    (FEAT_EBF16, FPCR.EBF = 1); :mod:`workbench.engine.operations.pair_dot` states each.
``b_format``
    Format of B where it differs from A's ``in_format`` (None: the same), for the kinds
    whose instructions take two operand types: ``"int-mma"`` (PTX ``mma ... .s32.atype.btype.s32``
    with ``.atype``, ``.btype`` each ``.s8`` or ``.u8``).
``overflow``
    ``"int-mma"``: what an int32 accumulator does with a result outside its range,
    ``"wrap"`` (two's complement, modulo 2^32) or ``"saturate"`` (clamped to
    [-2^31, 2^31 - 1], PTX ``.satfinite``); :mod:`workbench.engine.operations.int_mma`.

Every integer parameter is held to a range that no real or plausible unit leaves
(:data:`PARAM_BOUNDS`, each with its reason), checked when a Model is made and so by
:func:`workbench.custom_model`, unit files and the probes' search (whose ranges are
drawn from it): a unit of ``L = 10**9`` is refused, not left to allocate a block of
10**9 products per row.  The other parameters are names their registries check
(kinds, formats, roundings, pair rules) and flags.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, cast

import numpy as np

from ..numbers import formats as _formats
from ..numbers.validation import unknown_name
from . import checks as _checks
from .operands import float_operands, plus_zeros

T = TypeVar("T")

if TYPE_CHECKING:
    from .operands import Operands, RowBattery
    from .trace import Block

#: The built-in elementary operations (Xie et al. Table 1, then the CPU bf16 pair units);
#: :func:`kinds` lists every registered one (:mod:`workbench.engine.model`).
KINDS = ("t-fdpa", "fma", "e-fdpa", "ftz-addmul", "tr-fdpa", "gtr-fdpa", "st-fdpa", "gst-fdpa", "pair-dot", "int-mma")
ROUNDINGS = _checks.ROUNDINGS
#: Directions of TR-/GTR-FDPA's re-alignment (Xie Algorithms 10-11; "rz": the Figure 3 twin).
ALIGNMENT_ROUNDINGS = ("rd", "rz")
#: Parameter names shared with the probes (``.params`` keys).
PARAM_NAMES = (
    "kind", "in_format", "out_format", "L", "F", "rounding", "result_format", "sticky",
    "c_position", "late_rounding", "zero_exponent", "interleave", "group_F", "P", "F2",
    "alignment_rounding", "k_block", "G", "scale_format", "flush_subnormals", "flush_output_subnormals",
    "pair_rule", "b_format", "overflow",
)


@dataclass(frozen=True)
class Bound:
    """The range ``low <= value <= high`` an integer parameter of :class:`Model` is held
    to, and the ``reason`` for it."""

    name: str
    low: int
    high: int
    reason: str

    def check(self, value: int, given: str = "") -> None:
        """Raise a ValueError naming the parameter, ``value``, the bound and its reason
        when ``value`` lies outside it; ``given`` names the argument the value came from
        (``"neab=..."`` for an F that :func:`workbench.custom_model` computed)."""
        if not self.low <= value <= self.high:
            source = f" (from {given})" if given else ""
            raise ValueError(f"{self.name}={value}{source}: expected {self.low} <= {self.name} <= {self.high} "
                             f"({self.reason})")


#: The largest block of a known unit: 64 products (Blackwell's fp4 block-scaled MMA,
#: ``tcgen05.mma.block_scale.k64``); the probes' search tries the powers of two up to it.
LARGEST_KNOWN_L = 64
#: The bound of L: 64 times the largest known block, room for plausible designs.
MAX_L = 64 * LARGEST_KNOWN_L
#: The bound of the alignment windows F, group_F and F2 (fractional bits).
MAX_F = 56
#: The bound of ``|zero_exponent|``: beyond every product's exponent.
MAX_ZERO_EXPONENT = 4096


def _window(name: str) -> str:
    """The reason of the bound of an alignment window's fractional bits ``name``."""
    return (f"fractional bits of an alignment window: a term aligned at the largest exponent (a product's "
            f"significand is below 4) takes {name} + 2 bits and a sticky bit one more in the kernels' signed 64-bit "
            f"integers, so at {name} = {MAX_F} it takes 59 of their 63 bits and leaves 4 to the carries of a "
            "block's sum; the widest known window is F = 35 (Blackwell's GST-FDPA)")


#: The range of every integer parameter of :class:`Model`, with its reason; a Model
#: takes ints (and None where the field allows it) only in these ranges.
PARAM_BOUNDS: dict[str, Bound] = {b.name: b for b in (
    Bound("L", 1, MAX_L, f"products per block: the largest known block is {LARGEST_KNOWN_L} (Blackwell's fp4 "
                         f"block-scaled MMA); {MAX_L} leaves room for designs 64 times wider, while zero-padding K to "
                         f"whole blocks of L adds at most {MAX_L - 1} elements to each row of A and column of B"),
    Bound("F", 0, MAX_F, _window("F")),
    Bound("zero_exponent", -MAX_ZERO_EXPONENT, MAX_ZERO_EXPONENT,
          "exponent of zero terms: every format's exponents lie in float64's [-1022, 1023], so every product's "
          f"lies in [-2148, 2048], and a zero exponent beyond +-{MAX_ZERO_EXPONENT} gives the results that "
          f"+-{MAX_ZERO_EXPONENT} gives; the known ones are -139 to -19 (NVIDIA) and -999 (MMA-Sim's AMD models)"),
    Bound("interleave", 1, MAX_L // 2, f"interleaved groups of a block: each takes whole pairs of its elements, so "
                                       f"2 x interleave <= L <= {MAX_L}; the known units interleave 2 (fp8 "
                                       "mma.sync, Khattak & Mikaitis Section IV-A5)"),
    Bound("group_F", 0, MAX_F, _window("group_F")),
    Bound("P", 2, 4, "products FTZ-AddMul sums pairwise: 2 or 4 (Xie et al. Algorithm 2)"),
    Bound("F2", 0, MAX_F, "fractional bits of TR-/GTR-FDPA's rounded two-term sum, held in the kernels' signed "
                          f"64-bit integers as F is (F2 <= {MAX_F} for the same reason); CDNA3's is 31 (Xie et al. "
                          "Table 7)"),
    Bound("k_block", 1, MAX_L, f"elements sharing one scale factor: a block of L holds whole scale blocks, so "
                               f"k_block <= L <= {MAX_L}; the known ones are 32 (OCP MX) and 16 (NVFP4)"),
    Bound("G", 1, MAX_L, f"GST-FDPA's group size divides k_block, so G <= {MAX_L}; NVFP4's is 16 "
                         "(Xie et al. Table 5)"),
)}
#: The integer fields of :class:`Model`: those with a bound.
_INT_FIELDS = tuple(PARAM_BOUNDS)


def check_bounds(params: Mapping[str, Any]) -> None:
    """Check the integer parameters in ``params`` (Model keywords; None and the other
    keys are left alone) against :data:`PARAM_BOUNDS`: a ValueError names the first
    parameter out of its bound, its value, the bound and the reason."""
    for name, bound in PARAM_BOUNDS.items():
        v = params.get(name)
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            bound.check(int(v))


@dataclass(frozen=True, kw_only=True)
class Model:
    """Arithmetic of one matrix instruction; see the module docstring for each field."""

    kind: str = "t-fdpa"
    in_format: str = "fp16"
    out_format: str = "fp32"
    L: int = 8
    F: int = 24
    rounding: str = "rz"
    result_format: str | None = None
    sticky: bool = False
    c_position: str = "early"
    late_rounding: str = "rne"
    zero_exponent: int | None = None
    interleave: int = 1
    group_F: int | None = None
    P: int | None = None
    F2: int | None = None
    alignment_rounding: str | None = None
    k_block: int | None = None
    G: int | None = None
    scale_format: str | None = None
    flush_subnormals: bool = False
    flush_output_subnormals: bool = False
    pair_rule: str | None = None
    b_format: str | None = None
    overflow: str | None = None

    def __post_init__(self) -> None:
        self._check_types()
        check_bounds(self.__dict__)
        op = operation(self.kind)
        if op.integer:       # integer units: integer operands and accumulator (formats.IntFormat)
            for name in ("in_format", "b_format", "out_format"):
                if getattr(self, name) is not None and not _formats.is_int_format(getattr(self, name)):
                    raise ValueError(f"{name}={getattr(self, name)!r}: kind={self.kind!r} is an integer unit; expected "
                                     f"an integer format ({', '.join(f.name for f in _formats.list_int_formats())})")
        else:
            for name in ("in_format", "out_format"):
                _formats.format(getattr(self, name))  # raises on unknown names
            out = _formats.format(self.out_format)
            if out.name not in ("fp64", "fp32", "fp16", "bf16"):
                raise ValueError(f"out_format={self.out_format!r}: expected fp64, fp32, fp16 or bf16")
        # the domains of the flat fields, whichever operation reads them
        _checks.check_format("result_format", self.result_format)
        _checks.check_format("scale_format", self.scale_format)
        _checks.check_block("L", self.L)
        _checks.check_rounding("rounding", self.rounding)
        _checks.check_rounding("late_rounding", self.late_rounding)
        _checks.check_c_position(self.c_position)
        if self.interleave < 1 or self.L % (2 * self.interleave if self.interleave > 1 else 1):
            raise ValueError(f"interleave={self.interleave!r} must be >= 1 and split L={self.L} into pairs")
        names = {f.name for f in fields(op.params)}
        if self.alignment_rounding is not None and "alignment_rounding" not in names:
            raise ValueError(f"alignment_rounding={self.alignment_rounding!r}: only TR-FDPA and GTR-FDPA "
                             f"re-align their fused sums (Xie et al. Algorithms 10-11), not kind={self.kind!r}")
        if self.pair_rule is not None and "pair_rule" not in names:
            raise ValueError(f"pair_rule={self.pair_rule!r}: only the CPU pair units (kind='pair-dot') have a pair "
                             f"rule, not kind={self.kind!r}")
        for name in ("b_format", "overflow"):
            if getattr(self, name) is not None and name not in names:
                raise ValueError(f"{name}={getattr(self, name)!r}: only the integer units (kind='int-mma') read "
                                 f"{name}, not kind={self.kind!r}")
        # a memo of what operations derive from the parameters (:meth:`derived`)
        object.__setattr__(self, "_derived", {})
        self._look_up_formats()
        params = op.make_params(self)
        for name in names:  # defaults the operation fills in (TR-FDPA's alignment_rounding)
            if getattr(params, name) != getattr(self, name):
                object.__setattr__(self, name, getattr(params, name))
        self._look_up_formats()
        op.check_formats(self)
        object.__setattr__(self, "_operation_params", params)

    @classmethod
    def from_params(cls, params: Any, *, in_format: str, out_format: str, kind: str | None = None) -> "Model":
        """The model of an operation's parameter dataclass (e.g.
        :class:`~workbench.engine.operations.TFDPAParams`) on the given formats; ``kind``
        picks the operation when several share the parameter class."""
        if kind is None:
            matches = [k for k, op in OPERATIONS.items() if op.params is type(params)]
            if len(matches) != 1:
                raise ValueError(f"{type(params).__name__} is the parameter class of {matches or 'no operation'}: "
                                 "pass kind=")
            kind = matches[0]
        values = {f.name: getattr(params, f.name) for f in fields(params)}
        return cls(kind=kind, in_format=in_format, out_format=out_format, **values)

    def _look_up_formats(self) -> None:
        """The formats, looked up once (a registered format never changes encoding)."""
        object.__setattr__(self, "_formats", (_formats.number_format(self.in_format),
                                              _formats.number_format(self.out_format),
                                              _formats.number_format(self.result_format or self.out_format),
                                              _formats.number_format(self.b_format or self.in_format)))

    def _check_types(self) -> None:
        """Integer fields take ints (numpy ints are converted; bool is refused: ``L=True``
        is a mistake, not a block of one), flags take bools, names take strings."""
        for f in fields(Model):
            v = getattr(self, f.name)
            if v is None and "None" in str(f.type):
                continue
            if f.name in _INT_FIELDS:
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                    raise TypeError(f"{f.name}={v!r} ({type(v).__name__}): expected an int")
                object.__setattr__(self, f.name, int(v))
            elif f.type == "bool":
                if not isinstance(v, (bool, np.bool_)):
                    raise TypeError(f"{f.name}={v!r} ({type(v).__name__}): expected True or False")
                object.__setattr__(self, f.name, bool(v))
            elif not isinstance(v, str):
                raise TypeError(f"{f.name}={v!r} ({type(v).__name__}): expected a str")

    # ---------------------------------------------------------------- helpers
    @property
    def params(self) -> dict[str, Any]:
        """The arithmetic parameters as a plain dict (keys: :data:`PARAM_NAMES`)."""
        return {n: getattr(self, n) for n in PARAM_NAMES}

    @property
    def propagates_nan(self) -> bool:
        """True for the kinds whose NaN results carry an operand's payload or the x86
        default NaN (FMA chain, E-FDPA, FTZ-AddMul: MMA-Sim 2.1.1 evaluates them with
        ordinary float operations, :mod:`workbench.engine.nans`); False for the fused
        kinds, which return the canonical NaN (Xie et al. 2025 Section 4.2;
        ``ldexp_and_normalize`` in MMA-Sim, TR-/GTR-FDPA included)."""
        return self.operation.propagates_nan

    @property
    def operation(self) -> Operation:
        """The registered elementary operation of :attr:`kind`."""
        return operation(self.kind)

    @property
    def operation_params(self) -> Any:
        """The operation's parameter dataclass: the parameters it reads."""
        return self.__dict__["_operation_params"]

    @property
    def in_fmt(self) -> _formats.FloatFormat:
        return cast("_formats.FloatFormat", self.__dict__["_formats"][0])

    @property
    def out_fmt(self) -> _formats.FloatFormat:
        return cast("_formats.FloatFormat", self.__dict__["_formats"][1])

    @property
    def res_fmt(self) -> _formats.FloatFormat:
        return cast("_formats.FloatFormat", self.__dict__["_formats"][2])

    @property
    def formats(self) -> tuple[_formats.NumberFormat, _formats.NumberFormat, _formats.NumberFormat]:
        """The formats of A, B and C/D as :mod:`workbench.numbers.formats` records: floating-point
        formats, or :class:`~workbench.numbers.formats.IntFormat` for the integer kinds
        (:attr:`Operation.integer`), whose ``in_fmt``/``out_fmt`` are those records too
        (code that reads a floating-point field of them is never reached for an integer
        unit: it asks the operation).  B's is ``b_format``'s where the kind reads one."""
        f = self.__dict__["_formats"]
        return f[0], f[3], f[1]

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the :meth:`derived` memo (each process derives its own)."""
        return {**self.__dict__, "_derived": {}}

    def derived(self, compute: Callable[["Model"], T]) -> T:
        """``compute(self)``, computed once per model: what an operation derives from the
        (frozen) parameters alone - a kernel's parameter vector, which kernel it runs -
        so that a small product does not derive it again on every call.  ``compute`` is
        the memo's key, so it must be a module-level function (not a new lambda per
        call); callers that modify the value must copy it."""
        memo: dict[Callable[["Model"], Any], Any] = self.__dict__["_derived"]
        try:
            return cast(T, memo[compute])
        except KeyError:
            value = memo[compute] = compute(self)
            return value

    @property
    def neab(self) -> int:
        """Khattak-Mikaitis' extra alignment bits: F minus (output precision - 1)."""
        return self.F - (self.out_fmt.p - 1)

    def with_params(self, **changes: Any) -> "Model":
        """A copy with some arithmetic parameters changed (validated again)."""
        return replace(self, **changes)

    def describe(self) -> str:
        """``name=value`` of the parameters this kind uses (those left at None/False,
        interleave 1 and the late rounding of an early c omitted)."""
        used = {"kind", "in_format", "out_format"} | {f.name for f in fields(self.operation.params)}
        keep = {k: v for k, v in self.params.items()
                if v not in (None, False) and k in used and not (k == "interleave" and v == 1)
                and not (k == "late_rounding" and self.c_position != "late")}
        return ", ".join(f"{k}={v}" for k, v in keep.items())


# ====================================================================== operations
# The operation protocol and the registry of elementary operations.
#
# An *elementary operation* is the arithmetic a matrix unit applies to one block of
# products and an accumulator (Xie et al. 2025, Section 4.1, Table 1: T-FDPA, FMA
# chain, E-FDPA, FTZ-AddMul, TR-/GTR-FDPA, ST-/GST-FDPA).  Each lives in
# :mod:`workbench.engine.operations` as an :class:`Operation` subclass that holds its
# parameter dataclass (validated on construction), its dispatch to the compiled kernels
# (``run``, ``prepare``), its step of ``explain`` (``explain_block``), its error sources of
# Xie et al. Table 9 (``error_terms``) and block-FMA bound (``bound_shape``) and its probing
# hints.  A Model finds its operation by ``kind`` in :data:`OPERATIONS` (so the record and
# the registry live in one module: neither can be imported without the other).

@dataclass(frozen=True)
class BoundShape:
    """The block-FMA bound an operation obeys (:func:`workbench.matmul.bounds.block_fma_bound`):
    ``block`` products per fused step, ``F`` fractional bits of the alignment (None: the
    block is summed exactly), ``rounding`` of the block result."""

    block: int
    F: int | None
    rounding: str


@dataclass(frozen=True)
class ErrorTerm:
    """One error source of Xie et al. Table 9 without the operation's name:
    ``coefficient x 2^(reference + offset)``, ``reference`` one of ``"e_max"``,
    ``"e_result"`` or ``"absolute"`` (2^offset), as :class:`workbench.matmul.bounds.ErrorSource`."""

    source: str
    expression: str
    coefficient: float
    reference: Literal["e_max", "e_result", "absolute"]
    offset: int


class Operation:
    """The protocol of an elementary operation; subclasses set the class attributes
    and override what they do differently.  Instances are stateless."""

    #: Name of the operation as ``Model.kind`` spells it.
    kind: ClassVar[str] = ""
    #: Where the papers define it.
    citation: ClassVar[str] = ""
    #: Parameter dataclass: fields named as :class:`~workbench.engine.model.Model`'s.
    params: ClassVar[type]
    #: NaN results carry an operand's payload (ordinary float arithmetic, MMA-Sim 2.1.1)
    #: instead of the canonical NaN of the fused operations (Xie Section 4.2).
    propagates_nan: ClassVar[bool] = False
    #: Takes block scale factors (``scale_a``/``scale_b`` of ``gemm``).
    scaled: ClassVar[bool] = False
    #: Probing hints: the result depends on an alignment window of F bits (F can be
    #: refined by verification, Xie Section 3.1.4) ...
    windowed: ClassVar[bool] = False
    #: ... and zero terms carry an exponent into it (``zero_exponent`` can be searched).
    has_zero_exponent: ClassVar[bool] = False
    #: Has a row kernel for batches of independent dot products (:meth:`dots`).
    has_row_kernel: ClassVar[bool] = False
    #: The compiled kernels it shares with others (``"t-fdpa"``: kernels.py; ``"amd"``:
    #: operations/amd_fdpa/ and FTZ-AddMul), so that both families can compile in parallel
    #: (:mod:`workbench.sweep.warmup`).
    kernel_family: ClassVar[str] = "t-fdpa"
    #: Accumulations (:data:`workbench.engine.core.ACCUMULATIONS`) it implements.
    accumulations: ClassVar[tuple[str, ...]] = ("chain",)
    #: Probing hint: when the probes had doubts (notes) about a model of this kind, the
    #: models around it are searched before it is returned (:mod:`workbench.probes.inference`).
    searched_when_uncertain: ClassVar[bool] = False
    #: Probing hint: the probes revise its proposal by the exhaustive search when it
    #: fails a first randomised test (:mod:`workbench.probes.inference`); False for
    #: operations whose searched space the probes' features already pin down.
    revised_by_search: ClassVar[bool] = True
    #: How the report names its rounding when the operation reads no ``rounding``
    #: parameter (each step rounds as IEEE arithmetic does), None otherwise.
    fixed_rounding: ClassVar[str | None] = None
    #: Probing hint: the smallest block size L the probes' search tries for it.
    min_search_L: ClassVar[int] = 1
    #: Has an exact SMT encoding (:mod:`workbench.discrimination.smt`, Valpey et al. 2025).
    smt_encodable: ClassVar[bool] = False
    #: Has a CUDA kernel (:meth:`run_cuda`; ``gemm(..., device="cuda")``).
    has_cuda_kernel: ClassVar[bool] = False
    #: An integer unit: its formats are :class:`~workbench.numbers.formats.IntFormat` (``s8``,
    #: ``u8``, ``s32``), its results exact integers; the floating-point machinery (input
    #: rounding, error bounds, the probes' floating-point features) does not apply.
    integer: ClassVar[bool] = False

    # ------------------------------------------------------------ parameters
    @property
    def param_names(self) -> tuple[str, ...]:
        """Names of the parameters the operation reads (its dataclass's fields)."""
        return tuple(f.name for f in fields(self.params))

    def make_params(self, model: Model) -> Any:
        """The operation's parameter dataclass built from the model's fields (validated)."""
        return self.params(**{f.name: getattr(model, f.name) for f in fields(self.params)})

    def check_formats(self, model: Model) -> None:
        """Raise ValueError when the formats of ``model`` do not suit the operation."""

    def check_kernel(self, model: Model) -> None:
        """Raise ValueError when the compiled kernels cannot hold ``model``'s arithmetic
        (wider fixed-point sums than they carry); the probes ask before they propose it."""

    def positive_zero(self, model: Model) -> bool:
        """Whether every zero output of ``model`` is +0, whatever the signs of the addends
        or of a sum that rounds to zero: NVIDIA tensor cores do not output -0 (Valpey et
        al. 2025 Section 4.4, measured; MMA-Sim 2.1.1's t_fdpa, st_fdpa and gst_fdpa end
        in ``+ 0.0``).  The fused kinds' kernels apply it where a later IEEE addition
        would see the sign (a late c); :meth:`finish` applies it to every output and to
        ``explain``'s value."""
        return False

    def finish(self, model: Model, D: np.ndarray) -> np.ndarray:
        """The unit's output ``D`` with its sign rule for zeros (:meth:`positive_zero`):
        the one place every engine path - the core's general, small and row paths, the
        GPU back end, :meth:`screen_rows` and ``explain`` - finishes what a kernel returned.  For the
        fused kinds it equals the rule at each fused sum's final rounding: a chain's last
        step is that rounding, and the fp32 accumulator of ``"outside"``/``"promote"``
        adds with round-to-nearest, where a zero sum of +0 terms is +0 (IEEE 754-2019
        Section 6.3)."""
        return plus_zeros(D) if self.positive_zero(model) else D

    def block_size(self, model: Model) -> int:
        """Elements consumed by one operation (one block of a trace)."""
        return int(model.L)

    def late_c(self, model: Model) -> bool:
        """Whether c is added once after all the blocks (not inside each block's
        operation); :func:`~workbench.engine.explain.explain` shows that addition."""
        return False

    # ------------------------------------------------------------ arithmetic
    def prepare(self, model: Model, A: np.ndarray, B: np.ndarray) -> Operands:
        """A and B checked against the input format, as float64 ``A`` and ``B^T``."""
        return float_operands(model, A, B)

    def run(self, model: Model, ops: Operands, acc: np.ndarray, accumulation: str,
            promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        """D = unit(A, B, C) on ``acc`` (C on entry); returns D (``acc`` or a new array)."""
        raise NotImplementedError(f"{type(self).__name__}.run")

    def run_small(self, model: Model, A: np.ndarray, B: np.ndarray, C: np.ndarray, accumulation: str,
                  promote_every: int | None, scale_a: np.ndarray | None = None,
                  scale_b: np.ndarray | None = None) -> np.ndarray | None:
        """D = unit(A, B, C) as float64 for a small product, straight from float64
        operands A (M, K), B (K, N) and C (M, N), in one compiled call on the calling
        thread: no workspace, no parallel launch, no parameter vector built again (the
        per-call cost of :func:`workbench.gemm` on tiny products, issue 41).  Every
        input check stays: a ValueError names the first value of A, then B, then C that
        is not representable (in the input format; C in the output format), as
        :meth:`prepare` and gemm's check of C do.  Scaled operations (:attr:`scaled`)
        also get their block scale factors, ``scale_a`` (M, nb) and ``scale_b`` (nb, N)
        float64 of the shapes gemm checked, whose values they check against the scale
        format; the others never get them.  Bit for bit :meth:`run`'s result
        (before :meth:`finish`, which the caller applies).  ``None``
        where the operation has no such path for this model or accumulation: the caller
        then prepares and runs (this default)."""
        return None

    def dots(self, model: Model, a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
        """``acc[r] <- unit(a[r, :], b[r, :], acc[r])`` on the row kernel (operations with
        :attr:`has_row_kernel`; :func:`workbench.engine.core.dots` runs the others one
        1 x K x 1 product per row)."""
        raise NotImplementedError(f"{type(self).__name__} has no row kernel")

    def screen_rows(self, params: dict[str, Any], battery: RowBattery, acc: np.ndarray) -> np.ndarray:
        """``acc[r] <- unit(a[r, :], b[r, :], acc[r])`` for one candidate of a search
        over many (:mod:`workbench.probes.search`), ``params`` its Model keywords: the
        same bits as :meth:`dots`, with what the candidates share computed once per
        ``battery`` (:class:`~workbench.engine.operands.RowBattery`).  Operations with
        :attr:`has_row_kernel` only; a ValueError when the kernels cannot hold the
        candidate's arithmetic.  This default builds the Model and calls :meth:`dots`."""
        model = Model(**params)
        return self.finish(model, self.dots(model, battery.a, battery.b, acc))

    def run_cuda(self, model: Model, ops: Operands, acc: np.ndarray, accumulation: str,
                 promote_every: int | None, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> np.ndarray:
        """:meth:`run` on the GPU (operations with :attr:`has_cuda_kernel`), bit for bit
        the CPU's result; :mod:`workbench.engine.gpu` holds the shared device machinery."""
        raise NotImplementedError(f"{type(self).__name__} has no CUDA kernel")

    def check_run(self, accumulation: str, promote_every: int | None,
                  scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> None:
        """The checks every operation shares: scale factors only for scaled ones, an
        accumulation it implements, ``promote_every`` only with ``"promote"``."""
        if not self.scaled and (scale_a is not None or scale_b is not None):
            raise ValueError(f"scale_a/scale_b are only used by scaled models (st-fdpa, gst-fdpa), not {self.kind!r}")
        if self.scaled and (scale_a is None or scale_b is None):
            raise ValueError("scaled models need scale_a and scale_b")
        if accumulation not in self.accumulations:
            raise ValueError(f"accumulation={accumulation!r} is not implemented for {self.kind!r} models "
                             f"(expected one of {self.accumulations})")
        if accumulation != "promote" and promote_every is not None:
            raise ValueError("promote_every is only used with accumulation='promote'")

    # ------------------------------------------------------------ explanation and bounds
    def explain_block(self, index: int, start: int, K: int, a: np.ndarray, b: np.ndarray, d: float,
                      model: Model, scale_a: np.ndarray | None, scale_b: np.ndarray | None) -> Block:
        """The trace of block ``index``: elements ``start ...`` (``a``, ``b``) of the
        zero-padded row of K values, accumulator ``d``; the scale factors of the whole
        row for scaled operations."""
        raise NotImplementedError(f"{type(self).__name__}.explain_block")

    def error_terms(self, L: int | None, F: int | None, in_format: Any) -> tuple[ErrorTerm, ...] | None:
        """Error sources of Xie et al. Table 9 besides the output rounding; None when
        the table has no row for the operation."""
        return None

    def includes_output_rounding(self) -> bool:
        """Whether the output rounding is one of the Table 9 sources."""
        return True

    def bound_shape(self, model: Model) -> BoundShape | None:
        """The block-FMA bound of the operation, None when it has none here."""
        return None

    def table2_features(self, model: Model) -> dict[str, Any] | None:
        """The features of Khattak & Mikaitis 2025 Table II (alignment window, accumulator
        precision, final rounding, c order, interleaving); None when the operation has no
        alignment window of F bits (:func:`workbench.studies.notebook_support.feature_row`)."""
        return None

    # ------------------------------------------------------------ probing hints
    def has_twin(self, model: Model) -> bool:
        """Whether another kind can compute the same bits as ``model`` on every input
        (the probes then always search around it before returning it)."""
        return False


#: The registered operations, by ``kind``.
OPERATIONS: dict[str, Operation] = {}


def register(op: Operation, *, replace: bool = False) -> Operation:
    """Add ``op`` to :data:`OPERATIONS` under ``op.kind``; a kind already registered is
    refused unless ``replace``.  Returns ``op``."""
    if not isinstance(op, Operation) or not op.kind:
        raise TypeError(f"{op!r}: expected an Operation instance with a kind")
    if op.kind in OPERATIONS and not replace:
        raise ValueError(f"kind={op.kind!r} is already registered ({type(OPERATIONS[op.kind]).__name__})")
    OPERATIONS[op.kind] = op
    return op


def unregister(kind: str) -> None:
    """Remove a registered operation (tests that register their own)."""
    OPERATIONS.pop(kind, None)


def operation(kind: str) -> Operation:
    """The registered operation of ``kind``; a ValueError lists the known ones."""
    try:
        return OPERATIONS[kind]
    except (KeyError, TypeError):
        raise unknown_name("kind", kind, tuple(OPERATIONS),
                           extra=" (the elementary operations of Xie et al.)") from None


def kinds() -> tuple[str, ...]:
    """The registered kinds, in registration order."""
    return tuple(OPERATIONS)


__all__ = ["Model", "KINDS", "ROUNDINGS", "ALIGNMENT_ROUNDINGS", "PARAM_NAMES", "PARAM_BOUNDS", "Bound", "check_bounds",
           "LARGEST_KNOWN_L", "MAX_L", "MAX_F", "MAX_ZERO_EXPONENT", "Operation", "BoundShape", "ErrorTerm",
           "OPERATIONS", "register", "unregister", "operation", "kinds"]
