"""Presets as data: which arithmetic each device's matrix instructions perform.

One :class:`Preset` record per (architecture, instruction, input format, output
format[, variant]), holding the arithmetic parameters of :class:`workbench.engine.Model`
(it *is* a Model, so it can be passed to :func:`workbench.gemm` directly) plus where
the numbers come from.  Nothing here computes; the engine knows no preset.

Sources (``../shared/seeds``):

* Xie et al. 2025 (MMA-Sim), Tables 3-7 and the zero exponents of the MMA-Sim 2.1.1
  package (-131/-132/-133 for fp32 output, -19/-20/-21 for fp16 output);
* Khattak & Mikaitis 2025, Table II and Section IV (neab, NFMA, fp8 through
  ``mma.sync`` interleaved with c added late, "B200-RN");
* the GPU vectors in ``../shared/hw_vectors`` (every row reproduced by the tests).

Where the papers disagree the records keep named variants; ``default=True`` marks the
one :func:`preset` returns without ``instruction``/``variant``:

* Hopper fp8: ``wgmma`` (native QGMMA, F = 13, RZ to E8M13; Xie Table 4, Khattak
  Fig. 5d, and the H100/H200 fp8 fp32 vectors) is the default because it is the
  instruction GEMM libraries use for fp8 on sm90; ``mma.sync`` (converted to fp16,
  two interleaved groups of 16, c added late with RNE; Khattak Section IV-A5, the
  H100/H200 fp8 fp16 vectors) is the variant.
* Blackwell fp8: ``tcgen05.mma`` (Xie Table 4: L = 32, F = 25, RZ) is the default for
  the same reason; ``mma.sync`` (Khattak Section IV-A6, the B200 fp8 vectors) is a
  variant.  ``variant="rn"`` is Khattak-Mikaitis' "B200-RN" (final rounding RNE).
* Turing fp16: ``mma.m16n8k8`` (8 terms, F = 24) is the default;
  ``mma.m8n8k4`` (Volta-compatible: 4 terms, F = 23; MMA-Sim) is the variant.
* AMD CDNA2 bf16: ``mfma`` without ``_1k`` (P = 2) is the default, ``variant="1k"``
  gives P = 4 (Xie Table 6).
* AMD CDNA3 fp16: ``variant="rz"`` is *not a device*: it is the hypothetical
  ``v_mfma_f32_32x32x8_f16_rz`` of MMA-Sim Section 6.2.4 / Figure 3, the CDNA3
  TR-FDPA with its internal round-down replaced by round-toward-zero
  (``alignment_rounding="rz"``), kept to reproduce the figure's symmetric twin.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from . import formats as _formats
from .engine.model import PARAM_BOUNDS, PARAM_NAMES, Model
from .evidence import Evidence, stored as _stored_evidence
from .gate import unknown_name

__all__ = ["Preset", "preset", "presets", "custom_model", "architecture_of", "PresetTable", "ARCHITECTURES", "DEVICES",
           "Evidence", "evidence_table", "by_name", "FORMAT_FAMILIES", "unit_format", "PRESET_LEGEND", "read_parameters",
           "arithmetic", "render_presets"]

#: a format family named where one unit's format is expected stands for this member
#: (on AMD CDNA3 its FNUZ encoding, the one the hardware uses): ``preset("B200", "fp8")``
#: is the E4M3 unit, as ``DEVICE:fp8:OUT`` is in every entry point (:mod:`workbench.units`).
#: ``fp4`` is a format alias of ``fp4_e2m1`` already (:func:`workbench.format`).
FORMAT_FAMILIES: dict[str, str] = {"fp8": "fp8_e4m3", "fp6": "fp6_e2m3"}


#: What the preset table's ``arithmetic`` column says (``workbench presets``, ``--help``,
#: :class:`Preset`'s docstring and :class:`PresetTable` print this same text).
PRESET_LEGEND = """\
Legend: each row shows only the parameters its kind reads (the registered operation's own
parameter class, workbench.engine.operation(kind).param_names); a '*' marks the default
record that workbench.preset(DEVICE, IN, OUT) returns without instruction/variant.
  L=n         block size: products consumed by one operation (FMA chain: 1)
  F=n         fractional bits kept when the terms are aligned at the largest exponent
  F2=n        TR-/GTR-FDPA: fractional bits of the truncated two-term sum
  round=m     rounding of the fused sum to the output (rz, rne, ...)
  via=fmt     the sum is rounded to fmt first (e8m13: Hopper/Ada fp8)
  align=m     TR-/GTR-FDPA: direction of the re-alignment cut (rd on CDNA3; rz: MMA-Sim's twin)
  zero=e      exponent zero terms carry into the alignment (none: zeros take no part)
  c=early     c is a term of each fused sum; c=late(m): added after the products, rounded m
  il=n        interleaved groups of a block (fp8 mma.sync: 2); group_F=n their F
  sticky      a sticky bit below the F aligned bits
  P=n         FTZ-AddMul: products summed pairwise, 2 or 4 at a time
  ftz-in      subnormal inputs flushed to zero; ftz-out: subnormal results flushed
  block=n     scaled kinds: elements per scale factor; G=n GST-FDPA's group; scale=fmt
  RNE/FMA     FMA chain: every FMA rounds to nearest even in the output format
  RNE/op      FTZ-AddMul: every add and multiply rounds to nearest even (binary32)
  rule=r      pair-dot (CPU dot-product units): x86-fma (VDPBF16PS), x86-even-odd (TDPBF16PS),
              arm-odd (BFDOT/BFMMLA, FPCR.EBF=0), arm-fused (FEAT_EBF16, FPCR.EBF=1)
  exact       int-mma (integer units): exact integer products and sums in an int32 accumulator
  overflow=o  int-mma: wrap (modulo 2^32) or saturate (clamped per instruction, PTX .satfinite)
  b=fmt       int-mma: B's format where it differs from A's (s8 x u8)
--wide prints one line per preset with devices and sources; --format csv|json gives every
read parameter as its own field."""


@dataclass(frozen=True, kw_only=True)
class Preset(Model):
    """A :class:`~workbench.engine.Model` with its provenance.

    ``name`` is ``"<architecture>/<instruction>/<in>-><out>[/<variant>]"``; it and
    ``unit_string`` (``DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]]``) name the record in
    every entry point (:func:`workbench.units.resolve`).  ``workbench presets`` prints the
    records; its columns (the legend below is appended to this docstring) show for each
    preset only the parameters its kind reads.
    """

    name: str = ""
    architecture: str = ""
    devices: tuple[str, ...] = ()
    instruction: str = ""
    variant: str | None = None
    default: bool = True
    source: str = ""
    notes: str = ""
    #: what the hardware (or the library in front of it) does with data wider than
    #: ``in_format``, with its source; :func:`workbench.gemm`'s ``input_rounding``
    #: applies the conversion named here
    wider_inputs: str = ""
    #: for a preset that nothing checks (no GPU vectors, witness, MMA-Sim pairing or
    #: stated paper result): what it is assumed from, shown as its ``"unchecked"``
    #: evidence; empty for every checked preset (``tests/test_evidence.py`` keeps both true)
    assumed_from: str = ""

    def model(self) -> Model:
        """The bare arithmetic (a plain :class:`Model`)."""
        return Model(**self.params)

    @property
    def unit_string(self) -> str:
        """``DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]]`` naming this record (its first device),
        with the optional fields only where they are needed to select it; read back by
        :func:`preset` and :func:`workbench.units.resolve`."""
        dev = self.devices[0] if self.devices else self.architecture
        base = f"{dev}:{self.in_format}:{self.out_format}"
        for extra in ("", f":{self.instruction}", f":{self.instruction}:{self.variant or ''}"):
            parts = (base + extra).split(":")
            try:
                got = preset(parts[0], parts[1], parts[2], instruction=(parts[3] or None) if len(parts) > 3 else None,
                             variant=(parts[4] or None) if len(parts) > 4 else None)
            except ValueError:
                continue
            if got.name == self.name:
                return base + extra.rstrip(":")
        raise AssertionError(f"no DEVICE:IN:OUT string selects {self.name}")  # the catalogue tests keep this false

    @property
    def evidence(self) -> tuple[Evidence, ...]:
        """What this preset was checked against and how much (:mod:`workbench.evidence`):
        the GPU vectors (per device and set), the real-GPU witness, the MMA-Sim
        differential and the papers' stated results, with counts derived from the test
        data; or one ``"unchecked"`` record saying what the preset is assumed from."""
        checks = _stored_evidence().get(self.name, ())
        if self.assumed_from:
            return checks + (Evidence(kind="unchecked", what=self.assumed_from),)
        return checks


Preset.__doc__ = (Preset.__doc__ or "") + "\n    The preset table's legend::\n\n" + "\n".join(
    "        " + line if line else "" for line in PRESET_LEGEND.splitlines()) + "\n"

ARCHITECTURES: dict[str, tuple[str, ...]] = {
    "volta": ("V100",),
    "turing": ("T4",),
    "ampere": ("A100", "A2", "A30"),
    "ada": ("L40S", "RTX4090", "Ada", "RTX1000Ada"),
    "hopper": ("H100", "H200"),
    "blackwell": ("B200",),
    "rtx-blackwell": ("RTXPRO6000",),
    "cdna1": ("MI100",),
    "cdna2": ("MI250X",),
    "cdna3": ("MI300X",),
    # CPU units (specification only; the x86 ones on the host where it has them)
    "x86-avx512-bf16": ("Zen4", "Zen5", "CooperLake"),
    "x86-amx-bf16": ("SapphireRapids", "GraniteRapids"),
    "arm-bf16": ("NeoverseV1", "NeoverseN2", "Graviton3"),
}
DEVICES: dict[str, str] = {d.lower(): a for a, ds in ARCHITECTURES.items() for d in ds}
_ARCH_ALIASES = {"ada lovelace": "ada", "ada-lovelace": "ada", "rtx blackwell": "rtx-blackwell",
                 "rtx_blackwell": "rtx-blackwell", "sm70": "volta", "sm75": "turing", "sm80": "ampere",
                 "sm89": "ada", "sm90": "hopper", "sm100": "blackwell", "sm120": "rtx-blackwell",
                 "gfx908": "cdna1", "gfx90a": "cdna2", "gfx942": "cdna3", "rtx pro 6000": "rtx-blackwell",
                 "rtx_pro_6000": "rtx-blackwell", "mi250": "cdna2", "mi300": "cdna3", "avx512-bf16": "x86-avx512-bf16",
                 "amx-bf16": "x86-amx-bf16", "amx": "x86-amx-bf16"}

_XIE4 = "Xie et al. 2025 Table 4 (T-FDPA parameters) and MMA-Sim 2.1.1 zero exponents"
_KM2 = "Khattak & Mikaitis 2025 Table II"
_HW = "reproduces every row of hw_vectors/{dev}/{fmt}.npz"

_RECORDS: list[Preset] = []


_NVIDIA = ("volta", "turing", "ampere", "ada", "hopper", "blackwell", "rtx-blackwell")
_FASI_TF32 = ("Fasi et al. 2021 (A100, TensorFloat-32 mode, whose suite passes with fp32 data such as 1 - 2^-24 "
              "loaded straight into the tf32 fragments; tc_test_numerics-A100-tf32.cu 'products are computed "
              "exactly' expects (1 - 2^-24)^2 -> (1 - 2^-11)^2)")


_CPU = ("x86-avx512-bf16", "x86-amx-bf16", "arm-bf16")


def _wider_inputs(arch: str, in_format: str) -> str:
    """What the hardware does with data wider than ``in_format`` (``Preset.wider_inputs``)."""
    if _formats.is_int_format(in_format):
        return (f"{in_format} operands: wider data is quantised in software before the instruction (e.g. PTX cvt "
                f"with .sat to .{in_format}, or a library's quantisation kernel); gemm takes integers of the format "
                "only and refuses input_rounding (nothing is rounded or wrapped silently)")
    if in_format == "fp64":
        return "fp64: nothing wider reaches the unit"
    if in_format == "fp32":
        return ("fp32, the unit's own format: fp64 data is rounded by the caller (numpy and torch casts round to "
                "nearest even), input_rounding='rne'")
    if in_format == "tf32" and arch in _NVIDIA:
        seen = "measured on the A100" if arch == "ampere" else f"measured on the A100 (Ampere), assumed for {arch}"
        return (f"tf32 operands sit in 32-bit registers: fed fp32 data the unit ignores the low 13 significand "
                f"bits, input_rounding='rz' ({seen}: {_FASI_TF32}); cuBLAS and CUTLASS convert first with "
                "cvt.rna.tf32.f32 (PTX ISA, cvt: round to nearest, ties away), input_rounding='rna'")
    if in_format == "tf32":
        return ("xf32 operands sit in 32-bit registers; what the unit does with the low 13 bits of fp32 data is "
                "not in our sources (Xie et al. 2025 feed xf32 values only; the AMD CDNA3 ISA guide was not "
                "checked here): choose input_rounding yourself. rocBLAS' own rocblas_xfloat32 type rounds fp32 to "
                "nearest even (float_to_xfloat32 in ROCm/rocBLAS library/include/internal/rocblas_xfloat32.h), "
                "input_rounding='rne' for data converted through it")
    if arch in _CPU:
        return ("bf16 operands: wider data is converted in software before the instruction, on x86 with "
                "VCVTNE2PS2BF16 / VCVTNEPS2BF16 (Intel SDM: round to nearest even, no MXCSR) and on Arm with "
                "BFCVT / BFCVTN (FPCR's mode, round to nearest even by default), input_rounding='rne'")
    if in_format in ("fp16", "bf16"):
        if arch in _NVIDIA:
            return (f"packed 16-bit operands: wider data is converted before the instruction, by default with "
                    f"cvt.rn.{'f16' if in_format == 'fp16' else 'bf16'}.f32 (PTX ISA, cvt: round to nearest even), "
                    "input_rounding='rne'")
        return ("packed 16-bit operands: wider data is converted in software before the MFMA; HIP's "
                "__float2half is static_cast<_Float16> (the compiler's conversion, round to nearest even in the "
                "default mode) and __float2bfloat16 adds 0x7FFF plus the kept LSB ('Round to nearest, round to "
                "even'), ROCm/clr hipamd/include/hip/amd_detail/amd_hip_fp16.h and amd_hip_bf16.h (2024-10), "
                "input_rounding='rne'")
    if arch in _NVIDIA:
        return ("packed 8/6/4-bit operands: wider data is converted before the instruction with "
                "cvt.rn.satfinite.<type>.f32 (PTX ISA, cvt: round to nearest even, saturating); "
                "input_rounding='rne' rounds the same but overflows to Inf/NaN instead of saturating")
    return ("packed 8-bit operands: wider data is converted before the MFMA; HIP's fp8 types use "
            "v_cvt_pk_fp8_f32 / v_cvt_pk_bf8_f32 (commented 'RNE CVT') or, on request, the stochastic "
            "v_cvt_sr_* forms, clamping to the format's largest finite value only when asked to saturate "
            "(cast_to_f8_from_f32 in ROCm/clr hipamd/include/hip/amd_detail/amd_hip_fp8.h, 2024-10; the "
            "instructions' rounding itself was not checked against the AMD CDNA3 ISA guide here); "
            "input_rounding='rne' for the round-to-nearest path")


def _add(arch: str, instruction: str, in_format: str, out_format: str, *, source: str,
         variant: str | None = None, default: bool = True, devices: tuple[str, ...] | None = None,
         notes: str = "", **params: Any) -> None:
    name = f"{arch}/{instruction}/{in_format}->{out_format}" + (f"/{variant}" if variant else "")
    _RECORDS.append(Preset(name=name, architecture=arch, devices=devices or ARCHITECTURES[arch],
                           instruction=instruction, variant=variant, default=default, source=source,
                           notes=notes, wider_inputs=_wider_inputs(arch, _formats.number_format(in_format).name),
                           in_format=in_format, out_format=out_format, **params))


def _nv_pair(arch: str, instruction: str, fin: str, L: int, F: int, ez32: int, ez16: int | None, *,
             source: str, fp16_out: bool, variant: str | None = None, default: bool = True,
             devices: tuple[str, ...] | None = None, rounding32: str = "rz", **extra: Any) -> None:
    _add(arch, instruction, fin, "fp32", kind="t-fdpa", L=L, F=F, rounding=rounding32, zero_exponent=ez32,
         source=source, variant=variant, default=default, devices=devices, **extra)
    if fp16_out:
        _add(arch, instruction, fin, "fp16", kind="t-fdpa", L=L, F=F, rounding="rne", zero_exponent=ez16,
             source=source, variant=variant, default=default, devices=devices,
             **{k: v for k, v in extra.items() if k != "result_format"})


def _build() -> None:
    hw = _HW
    # ---------------------------------------------------------------- Volta
    _nv_pair("volta", "mma.m8n8k4", "fp16", 4, 23, -131, -19, fp16_out=True,
             source=f"{_XIE4}; {_KM2} (V100: NFMA 4, neab 0); {hw.format(dev='V100', fmt='fp16')}")
    # ---------------------------------------------------------------- Turing
    _nv_pair("turing", "mma.m16n8k8", "fp16", 8, 24, -132, -20, fp16_out=True, source=_XIE4)
    _nv_pair("turing", "mma.m8n8k4", "fp16", 4, 23, -131, -19, fp16_out=True, variant="m8n8k4", default=False,
             source=f"{_XIE4}; MMA-Sim falls back to Volta's settings for m8n8k4")
    # ------------------------------------------------------- Ampere / Ada
    for arch, devs in (("ampere", "A100, A2"), ("ada", "Ada, L40S")):
        src = f"{_XIE4}; {_KM2}; reproduces every row of hw_vectors ({devs})"
        _nv_pair(arch, "mma", "tf32", 4, 24, -132, None, fp16_out=False, source=src)
        _nv_pair(arch, "mma", "bf16", 8, 24, -132, None, fp16_out=False, source=src)
        _nv_pair(arch, "mma", "fp16", 8, 24, -132, -20, fp16_out=True, source=src)
    for fin in ("fp8_e4m3", "fp8_e5m2"):
        _nv_pair("ada", "mma", fin, 16, 13, -132, -20, fp16_out=True, result_format="e8m13",
                 source=f"{_XIE4} (F = 13, RZ-E8M13); {_KM2} (L40S fp8: 13 fractional bits, c early); "
                        f"reproduces every row of hw_vectors/Ada and L40S/{fin}")
    _add("ampere", "dmma", "fp64", "fp64", kind="fma", L=1, devices=("A100",),
         source="Xie et al. 2025 Table 3 (FP64: chain of FMAs); Khattak & Mikaitis Section IV-A2")
    # ---------------------------------------------------------------- Hopper
    src_h = f"{_XIE4}; {_KM2} (H100/H200: neab 2, NFMA 16 / 8 for tf19); reproduces every row of hw_vectors/H100, H200"
    _nv_pair("hopper", "wgmma", "tf32", 8, 25, -133, None, fp16_out=False, source=src_h)
    _nv_pair("hopper", "wgmma", "bf16", 16, 25, -133, None, fp16_out=False, source=src_h)
    _nv_pair("hopper", "wgmma", "fp16", 16, 25, -133, -21, fp16_out=True, source=src_h)
    for fin in ("fp8_e4m3", "fp8_e5m2"):
        _nv_pair("hopper", "wgmma", fin, 32, 13, -133, -21, fp16_out=True, result_format="e8m13",
                 source=f"{_XIE4} (QGMMA: L 32, F 13, RZ-E8M13); {_KM2} (Fig. 5d); fp32 output reproduces "
                        f"every row of hw_vectors/H100, H200/{fin} (d_fp32, C = 0)")
        _nv_pair("hopper", "mma.sync", fin, 32, 25, -133, -21, fp16_out=True, variant="mma.sync", default=False,
                 interleave=2, c_position="late", late_rounding="rne",
                 source=f"{_KM2} (fp8*: converted to fp16, two interleaved HMMA groups of 16, c added late "
                        f"with RNE; Section IV-A5); fp16 output reproduces every row of hw_vectors/H100, "
                        f"H200/{fin} (d_fp16)")
    _add("hopper", "dmma", "fp64", "fp64", kind="fma", L=1,
         source="Xie et al. 2025 Table 3; Khattak & Mikaitis Table II (fp64: NFMA 1, IEEE FMA)")
    # ------------------------------------------------------------- Blackwell
    for arch, instr in (("blackwell", "tcgen05.mma"), ("rtx-blackwell", "mma")):
        src_b = (f"{_XIE4}; {_KM2} (B200 = H100 numerics); reproduces every row of hw_vectors/B200"
                 if arch == "blackwell" else _XIE4)
        _nv_pair(arch, instr, "tf32", 8, 25, -133, None, fp16_out=False, source=src_b)
        _nv_pair(arch, instr, "bf16", 16, 25, -133, None, fp16_out=False, source=src_b)
        _nv_pair(arch, instr, "fp16", 16, 25, -133, -21, fp16_out=True, source=src_b)
        for fin in ("fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1"):
            _nv_pair(arch, instr, fin, 32, 25, -133, -21, fp16_out=True,
                     source=f"{_XIE4} (FP8/6/4: L 32, F 25, RZ-FP32)")
    for fin in ("fp8_e4m3", "fp8_e5m2"):
        _nv_pair("blackwell", "mma.sync", fin, 32, 25, -133, -21, fp16_out=True, variant="mma.sync",
                 default=False, interleave=2, c_position="late", late_rounding="rne",
                 source=f"{_KM2} (B200 fp8 through mma.sync maps to HMMA: interleaved, c late, RNE; Section "
                        f"IV-A6); reproduces every row of hw_vectors/B200/{fin} (d_fp32 and d_fp16)")
    for fin, L in (("tf32", 8), ("bf16", 16), ("fp16", 16), ("fp8_e4m3", 32), ("fp8_e5m2", 32)):
        _add("blackwell", "tcgen05.mma", fin, "fp32", kind="t-fdpa", L=L, F=25, rounding="rne",
             zero_exponent=-133, variant="rn", default=False,
             assumed_from=f"blackwell/tcgen05.mma/{fin}->fp32 with the final rounding RNE instead of RZ "
                          "(Khattak & Mikaitis' hypothetical B200-RN); no device performs it",
             source="Khattak & Mikaitis 2025 Section IV-C and Fig. 7 ('B200-RN': B200 features, final "
                    "rounding RNE; a hypothetical unit)")
    _add("blackwell", "dmma", "fp64", "fp64", kind="fma", L=1,
         source="Xie et al. 2025 Table 3; Khattak & Mikaitis Table II")
    # ----------------------------------------------------------------- AMD
    amd = "Xie et al. 2025 Tables 6-7"
    for arch in ("cdna1", "cdna2", "cdna3"):
        _add(arch, "mfma", "fp32", "fp32", kind="fma", L=1, source=f"{amd} (FP32: chain of FMAs)")
    for arch in ("cdna2", "cdna3"):
        _add(arch, "mfma", "fp64", "fp64", kind="fma", L=1, source=f"{amd} (FP64: chain of FMAs)")
    _add("cdna1", "mfma", "bf16", "fp32", kind="e-fdpa", L=2, rounding="rne",
         source=f"{amd} (CDNA1 BF16: E-FDPA, L = 2); Algorithm 6 (exact sum, RNE-FP32)")
    _add("cdna1", "mfma", "fp16", "fp32", kind="e-fdpa", L=4, rounding="rne",
         source=f"{amd} (CDNA1 FP16: E-FDPA, L = 4); Algorithm 6 (exact sum, RNE-FP32)")
    _add("cdna2", "mfma", "bf16", "fp32", kind="ftz-addmul", L=2, P=2, flush_subnormals=True,
         flush_output_subnormals=True, source=f"{amd} (CDNA2 BF16 without _1k: FTZ-AddMul, P = 2)")
    _add("cdna2", "mfma_1k", "bf16", "fp32", kind="ftz-addmul", L=4, P=4, flush_subnormals=True,
         flush_output_subnormals=True, variant="1k", default=False,
         source=f"{amd} (CDNA2 BF16 with _1k: FTZ-AddMul, P = 4)")
    _add("cdna2", "mfma", "fp16", "fp32", kind="ftz-addmul", L=4, P=4, flush_subnormals=True,
         flush_output_subnormals=True, source=f"{amd} (CDNA2 FP16: FTZ-AddMul, P = 4)")
    for fin, L in (("tf32", 4), ("bf16", 8), ("fp16", 8)):
        _add("cdna3", "mfma", fin, "fp32", kind="tr-fdpa", L=L, F=24, F2=31, rounding="rne",
             source=f"{amd} (CDNA3: TR-FDPA, F 24, F2 31, RNE-FP32)")
    _add("cdna3", "mfma_rz", "fp16", "fp32", kind="tr-fdpa", L=8, F=24, F2=31, rounding="rne",
         alignment_rounding="rz", variant="rz", default=False,
         assumed_from="cdna3/mfma/fp16->fp32 with alignment_rounding 'rz' instead of 'rd' (MMA-Sim Figure 3's "
                      "hypothetical twin); no device performs it (tests/test_cdna3_rz_twin.py checks the engine's "
                      "arithmetic on hand-worked cases, not the unit)",
         source="Xie et al. 2025 Section 6.2.4 and Figure 3: the hypothetical v_mfma_f32_32x32x8_f16_rz, "
                "CDNA3's TR-FDPA (Table 7: F 24, F2 31, RNE-FP32) with the round-down of its internal "
                "fused summation (Algorithm 10 lines 14-15) replaced by round-toward-zero; the symmetric "
                "twin of their Figure 3, not a real device or instruction")
    for fin in ("fp8_e4m3fnuz", "fp8_e5m2fnuz"):
        _add("cdna3", "mfma", fin, "fp32", kind="gtr-fdpa", L=16, F=24, F2=31, rounding="rne",
             source=f"{amd} (CDNA3 FP8: GTR-FDPA, F 24, F2 31, RNE-FP32)")
    _cpu_records()


def _cpu_records() -> None:
    """The CPU bf16 pair units from their vendors' pseudo-code (kind ``pair-dot``,
    :mod:`workbench.engine.operations.pair_dot`): specification only - nothing here has
    been run against the silicon on the machines this project is tested on."""
    sdm = "Intel SDM Vol. 2 (2024)"
    arm = "Arm ARM (DDI 0487) pseudo-code BFDotAdd, BFMulH, FPAdd_BF16, BFRound, FPDot"
    for arch in ("x86-avx512-bf16", "x86-amx-bf16"):   # AMX CPUs have VDPBF16PS too (not their default)
        _add(arch, "vdpbf16ps", "bf16", "fp32", kind="pair-dot", L=2, pair_rule="x86-fma",
             default=arch == "x86-avx512-bf16",
             source=f"{sdm}, VDPBF16PS: per lane c += a[2i+1]*b[2i+1] then c += a[2i]*b[2i], 'FP32 FMA with "
                    "DAZ in, FTZ out and RNE rounding, MXCSR neither consulted nor updated'; NaN operands by Table 5-1",
             assumed_from="specification only: Intel's VDPBF16PS pseudo-code; the differential test against the "
                          "real instruction (tests/test_pair_dot.py, tests/test_cpu_bf16.py) skips on CPUs "
                          "without AVX512-BF16, and the development machine (AMD EPYC, Zen 3) has none")
    _add("x86-amx-bf16", "tdpbf16ps", "bf16", "fp32", kind="pair-dot", L=32, pair_rule="x86-even-odd",
         source=f"{sdm}, TDPBF16PS: temp1.fp32[2n+0] and [2n+1] FMA chains over k from 0 ('FP32 FMA with "
                "DAZ=FTZ=1, RNE rounding'), then tmpf32 = temp1[2n] + temp1[2n+1] and dst += tmpf32 "
                "(DAZ=FTZ=1, RNE); a 64-byte tile row holds 32 bf16 (L = 32)",
         assumed_from="specification only: Intel's TDPBF16PS pseudo-code (the SDM's current text: two "
                      "chains; the Intrinsics Guide's older text chains every pair into c); no AMX CPU was "
                      "available to check it, and NaN payloads are assumed to follow VDPBF16PS' Table 5-1 rule")
    for instr, L, default in (("bfdot", 2, True), ("bfmmla", 4, False)):
        _add("arm-bf16", instr, "bf16", "fp32", kind="pair-dot", L=L, pair_rule="arm-odd", default=default,
             source=f"{arm}: FPCR.EBF = 0, products and sums rounded to odd with overflow to Inf, inputs and "
                    f"results below 2^-126 flushed, default NaN; {instr.upper()} chains "
                    f"{L // 2} BFDotAdd per output",
             assumed_from="specification only: Arm's BFDotAdd pseudo-code with FPCR.EBF = 0 (QEMU's "
                          "target/arm bfdotadd implements the same); no Arm CPU was available to check it")
        _add("arm-bf16", instr, "bf16", "fp32", kind="pair-dot", L=L, pair_rule="arm-fused", variant="ebf16",
             default=False,
             source=f"{arm}: FEAT_EBF16 with FPCR.EBF = 1, FPDot (both products summed, rounded once) then FPAdd "
                    "with c, at FPCR's defaults RMode = RNE, FZ = 0, and DN = 1 (default NaN)",
             assumed_from="specification only: Arm's BFDotAdd pseudo-code with FEAT_EBF16 and FPCR.EBF = 1 "
                          "(RNE, FZ = 0, DN = 1 assumed); no Arm CPU with FEAT_EBF16 was available to check it")


def _scaled_records() -> None:
    for arch, instr in (("blackwell", "tcgen05.mma"), ("rtx-blackwell", "mma")):
        for fin in ("fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1"):
            _add(arch, instr + ".block_scale", fin, "fp32", kind="st-fdpa", L=32, F=25, rounding="rz",
                 zero_exponent=-133, k_block=32, scale_format="e8m0", variant="mx", default=False,
                 source="Xie et al. 2025 Algorithm 8 and Table 4 (MXFP8/6/4: ST-FDPA, L 32, F 25, E8M0 "
                        "scales per 32 elements)")
        _add(arch, instr + ".block_scale.k64", "fp4_e2m1", "fp32", kind="gst-fdpa", L=64, F=35, G=16,
             rounding="rz", zero_exponent=-139, k_block=16, scale_format="ue4m3", variant="nvfp4",
             default=False,
             source="Xie et al. 2025 Algorithm 9 and Table 5 (NVFP4: GST-FDPA, L 64, G 16, F 35, UE4M3 "
                    "scales per 16 elements; MMA-Sim zero exponent -139)")
        _add(arch, instr + ".block_scale.k64", "fp4_e2m1", "fp32", kind="gst-fdpa", L=64, F=35, G=16,
             rounding="rz", zero_exponent=-139, k_block=32, scale_format="e8m0", variant="mxfp4",
             default=False,
             source="Xie et al. 2025 Algorithm 9 and Table 5 (MXFP4 k64: GST-FDPA, E8M0 scales per 32)")


_PTX_MMA_INT = ("NVIDIA PTX ISA 9.x, 9.7.14.5.14 mma, Integer type: mma.sync.aligned.shape.row.col{.satfinite}.s32"
                ".atype.btype.s32, .atype/.btype .s8 or .u8; 'The integer mma operation is performed with .s32 "
                "accumulators. The .satfinite qualifier indicates that on overflow, the accumulated value is limited "
                "to the range MIN_INT32..MAX_INT32 ... If .satfinite is not specified, the accumulated value is "
                "wrapped instead'")
_INT_ORDER = ("PTX states no order of the products and c within an instruction, nor whether a partial sum is "
              "clamped: modelled as the instruction's exact sum c + sum a_k b_k, then wrapped or clamped once")


def _int_records() -> None:
    """The integer units (kind ``int-mma``, :mod:`workbench.engine.operations.int_mma`):
    specification only - no integer product of these devices is in the test data."""
    nv = {"turing": ("mma.m8n8k16", 16, "m8n8k16 (sm_75)"), "ampere": ("mma.m16n8k32", 32, "m16n8k32 (sm_80)"),
          "ada": ("mma.m16n8k32", 32, "m16n8k32 (sm_80 and later)"),
          "hopper": ("mma.m16n8k32", 32, "m16n8k32 (sm_80 and later)"),
          "blackwell": ("mma.m16n8k32", 32, "m16n8k32 (sm_80 and later)"),
          "rtx-blackwell": ("mma.m16n8k32", 32, "m16n8k32 (sm_80 and later)")}
    for arch, (instr, L, shape) in nv.items():
        for fin in ("s8", "u8"):
            for sat in (False, True):
                _add(arch, instr, fin, "s32", kind="int-mma", L=L, overflow="saturate" if sat else "wrap",
                     variant="satfinite" if sat else None, default=not sat,
                     source=f"{_PTX_MMA_INT}; shape {shape}: K = {L} per instruction"
                            + ("; with .satfinite" if sat else "; without .satfinite"),
                     assumed_from=f"specification only: PTX ISA mma integer type ({'saturating, .satfinite' if sat else 'wrapping, no .satfinite'}); "
                                  f"{_INT_ORDER}; no {arch} integer products are in the test data")
    wg = ("NVIDIA PTX ISA 9.x, wgmma.mma_async (sm_90a): .s32 D, .atype/.btype .s8 or .u8, K = 32, optional "
          ".satfinite, with mma's integer semantics")
    tc = ("NVIDIA PTX ISA 9.x, tcgen05.mma .kind::i8 (sm_100a): s32 D, 8-bit integer A and B, K = 32 per instruction; "
          "the instruction descriptor's 'saturate for integer types' bit")
    for arch, instr, src in (("hopper", "wgmma", wg), ("blackwell", "tcgen05.mma", tc)):
        for fin in ("s8", "u8"):
            for sat in (False, True):
                _add(arch, instr, fin, "s32", kind="int-mma", L=32, overflow="saturate" if sat else "wrap",
                     variant=instr + (".satfinite" if sat else ""), default=False,
                     source=src + ("; saturating" if sat else "; wrapping"),
                     assumed_from=f"specification only: {instr} with the integer semantics PTX states for mma "
                                  f"({'saturating' if sat else 'wrapping'})"
                                  + ("; the descriptor bit's clamping is assumed to be mma's .satfinite"
                                     if sat and instr == "tcgen05.mma" else "")
                                  + f"; {_INT_ORDER}; no {arch} integer products are in the test data")
    calc = ("ROCm amd_matrix_instruction_calculator --detail-instruction (Src0, Src1: int8, signed 8-bit integer; "
            "Src2, Vdst: int32, signed 32-bit integer)")
    for arch, instr, L in (("cdna1", "V_MFMA_I32_16X16X16I8", 16), ("cdna2", "V_MFMA_I32_16X16X16I8", 16),
                           ("cdna3", "V_MFMA_I32_16X16X32_I8", 32)):
        _add(arch, "mfma", "s8", "s32", kind="int-mma", L=L, overflow="wrap",
             source=f"AMD {arch.upper()} ISA, {instr} (and the other V_MFMA_I32_*_I8 shapes): D = A B + C with "
                    f"signed 8-bit A, B and signed 32-bit C, D, K = {L}; {calc}",
             assumed_from=f"specification only; no AMD source read here states the int32 overflow behaviour of {instr} "
                          "(the instruction calculator gives the operand types only, the CDNA ISA guides were not "
                          "checked for it, and no saturating form is listed): two's-complement wraparound is assumed, "
                          f"as 32-bit integer adds without a clamp wrap; no {arch} integer products are in the test "
                          "data")


_build()
_scaled_records()
_int_records()


# ------------------------------------------------------------------- lookup
def architecture_of(device_or_arch: str) -> str:
    """The architecture key (``"hopper"``, ``"cdna3"``, ...) of a device or architecture
    name, case and aliases ignored; a ValueError lists the known names otherwise."""
    if not isinstance(device_or_arch, str):
        raise TypeError(f"device_or_arch must be a str, got {type(device_or_arch).__name__}")
    key = device_or_arch.strip().lower()
    key = _ARCH_ALIASES.get(key, key)
    if key in ARCHITECTURES:
        return key
    if key in DEVICES:
        return DEVICES[key]
    devices = [d for ds in ARCHITECTURES.values() for d in ds]
    raise unknown_name("device or architecture", device_or_arch, [*ARCHITECTURES, *devices])


def _fmt_name(name: str | _formats.FloatFormat | _formats.IntFormat) -> str:
    return _formats.number_format(name).name


def unit_format(device_or_arch: str, name: str | _formats.FloatFormat) -> str:
    """The canonical input format a unit of ``device_or_arch`` uses for ``name``: a format
    name, alias or object gives its own name, a family of :data:`FORMAT_FAMILIES` its
    default member, and on AMD CDNA3 ``fp8_e4m3``/``fp8_e5m2`` the FNUZ encodings the
    hardware uses.  ValueError naming the value for anything else."""
    arch = architecture_of(device_or_arch)
    key = name.strip().lower() if isinstance(name, str) else name
    if isinstance(key, str) and key in FORMAT_FAMILIES:
        key = FORMAT_FAMILIES[key]
    fin = _fmt_name(key)
    if arch == "cdna3" and fin in ("fp8_e4m3", "fp8_e5m2"):
        fin += "fnuz"
    return fin


def by_name(name: str) -> Preset | None:
    """The record whose catalogue name (``workbench presets``' first column) is ``name``,
    case and surrounding spaces ignored; None when there is none."""
    key = name.strip().lower()
    return next((r for r in _RECORDS if r.name.lower() == key), None)


def format_family(name: str) -> tuple[str, ...]:
    """The input formats of the presets that ``name`` selects: a format name or alias
    (``"e4m3"``) gives that format (and its AMD FNUZ twin, which CDNA3 presets use for
    it), a family name such as ``"fp8"``, ``"fp6"`` or ``"mxfp8"`` the formats whose
    names start with it (``fp8_e4m3``, ``fp8_e5m2``, ``fp8_e4m3fnuz``, ...).

    Raises ValueError naming the families when ``name`` is neither."""
    used = {r.in_format for r in _RECORDS}
    key = name.strip().lower()
    try:
        fin = _fmt_name(key)
    except ValueError:
        family = key.removeprefix("mx")   # MXFP8 = fp8 elements with E8M0 block scales
        found = tuple(sorted(f for f in used if f.startswith(family + "_")))
        if found:
            return found
        families = sorted({f.split("_")[0] for f in used if "_" in f})
        raise ValueError(f"unknown format or format family {name!r}; families: {', '.join(families)}; "
                         f"formats: {', '.join(sorted(used))}") from None
    return tuple(f for f in (fin, fin + "fnuz") if f in used) or (fin,)


def preset(device_or_arch: str, in_format: str | _formats.FloatFormat, out_format: str | _formats.FloatFormat = "fp32", instruction: str | None = None,
           variant: str | None = None) -> Preset:
    """The preset of a device (``"H100"``) or architecture (``"hopper"``) for given
    input and output formats.

    Without ``instruction``/``variant`` the default record is returned (see the
    module docstring for which and why); ``instruction`` matches the record's
    instruction (``"mma.sync"``, ``"wgmma"``, ``"m8n8k4"``...), ``variant`` its variant
    name (``"rn"``, ``"1k"``, ``"mx"``, ``"nvfp4"``...).  Formats go through
    :func:`unit_format`: on AMD CDNA3, ``fp8_e4m3`` and ``fp8_e5m2`` mean the FNUZ
    encodings the hardware uses, and a family (``"fp8"``) means its default member
    (:data:`FORMAT_FAMILIES`).  :func:`workbench.units.resolve` takes the same request
    as one string, ``DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]]``.
    """
    arch = architecture_of(device_or_arch)
    fin = unit_format(arch, in_format)
    fout = _fmt_name(out_format)
    cands = [r for r in _RECORDS if r.architecture == arch and r.in_format == fin and r.out_format == fout]
    if instruction is not None:
        ins = instruction.strip().lower()
        exact = [r for r in cands if r.instruction.lower() == ins]
        cands = exact or [r for r in cands if r.instruction.lower().endswith(ins) or r.variant == ins]
    if variant is not None:
        cands = [r for r in cands if r.variant == variant]
    elif instruction is None:
        cands = [r for r in cands if r.default]
    if instruction is not None and variant is None and len(cands) > 1:
        cands = [r for r in cands if r.variant in (None, instruction)] or cands
    if not cands:
        have = sorted({(r.in_format, r.out_format, r.instruction, r.variant or "") for r in _RECORDS
                       if r.architecture == arch})
        listing = "; ".join(f"{i}->{o} [{ins}{'/' + v if v else ''}]" for i, o, ins, v in have)
        raise ValueError(
            f"no preset for {device_or_arch!r} ({arch}) with {str(in_format)!r} -> {str(out_format)!r}"
            f"{f', instruction={instruction!r}' if instruction else ''}{f', variant={variant!r}' if variant else ''}; "
            f"available: {listing}"
        )
    if len(cands) > 1:
        raise ValueError(f"ambiguous preset request; candidates: {', '.join(r.name for r in cands)}")
    rec = cands[0]
    key = device_or_arch.strip().lower()
    if key in DEVICES:  # keep the device the user asked for in front
        dev = next(d for d in rec.devices if d.lower() == key)
        rec = Preset(**{**{f.name: getattr(rec, f.name) for f in fields(rec)},
                        "devices": (dev,) + tuple(d for d in rec.devices if d != dev)})
    return rec


def read_parameters(model: Model) -> dict[str, Any]:
    """The parameters ``model``'s kind reads, as its registered operation names them
    (``model.operation.param_names``), with their values; ``L`` is the block size."""
    out: dict[str, Any] = {"L": model.operation.block_size(model)}
    out.update({n: getattr(model, n) for n in model.operation.param_names})
    return out


def arithmetic(model: Model) -> list[str]:
    """The tokens of the preset table's ``arithmetic`` column (:data:`PRESET_LEGEND`) for
    ``model``: the parameters its kind reads, at values that change something."""
    p = read_parameters(model)
    tok = [f"L={p['L']}"]
    for key in ("F", "F2"):
        if p.get(key) is not None:
            tok.append(f"{key}={p[key]}")
    if "rounding" in p:
        tok.append(f"round={p['rounding']}")
    elif model.operation.fixed_rounding is not None:
        tok.append(model.operation.fixed_rounding)
    if p.get("result_format") is not None:
        tok.append(f"via={p['result_format']}")
    if p.get("alignment_rounding") is not None:
        tok.append(f"align={p['alignment_rounding']}")
    if "zero_exponent" in p:
        tok.append(f"zero={'none' if p['zero_exponent'] is None else p['zero_exponent']}")
    if "c_position" in p:
        tok.append("c=early" if p["c_position"] == "early" else f"c=late({p['late_rounding']})")
    if p.get("interleave", 1) != 1:
        tok.append(f"il={p['interleave']}")
    if p.get("group_F") is not None:
        tok.append(f"group_F={p['group_F']}")
    if p.get("sticky"):
        tok.append("sticky")
    if p.get("P") is not None:
        tok.append(f"P={p['P']}")
    if p.get("flush_subnormals"):
        tok.append("ftz-in")
    if p.get("flush_output_subnormals"):
        tok.append("ftz-out")
    if p.get("k_block") is not None:
        tok.append(f"block={p['k_block']}")
    if p.get("G") is not None:
        tok.append(f"G={p['G']}")
    if p.get("scale_format") is not None:
        tok.append(f"scale={p['scale_format']}")
    if p.get("pair_rule") is not None:
        tok.append(f"rule={p['pair_rule']}")
    if p.get("b_format") is not None:
        tok.append(f"b={p['b_format']}")
    if p.get("overflow") is not None:
        tok.append(f"overflow={p['overflow']}")
    return tok


def _wrap(tokens: list[str], width: int) -> list[str]:
    lines: list[str] = []
    for t in tokens:
        if lines and len(lines[-1]) + 1 + len(t) <= width:
            lines[-1] += " " + t
        else:
            lines.append(t)
    return lines or [""]


def render_presets(recs: "list[Preset] | tuple[Preset, ...]", *, wide: bool = False, width: int = 100) -> str:
    """The preset table as text: by default grouped by architecture (a header line with
    its devices), one row per preset (``*`` default, full catalogue name, kind, the
    arithmetic tokens wrapped to fit ``width`` columns); ``wide``: one line per preset
    with devices and source.  :data:`PRESET_LEGEND` follows."""
    order = {a: i for i, a in enumerate(ARCHITECTURES)}
    recs = sorted(recs, key=lambda r: order.get(r.architecture, len(order)))     # stable: catalogue order within
    if not recs:
        return "(no presets)\n" + PRESET_LEGEND
    if wide:
        rows = [[("*" if r.default else " "), r.name, ", ".join(r.devices), r.kind, " ".join(arithmetic(r)), r.source]
                for r in recs]
        head = ["", "name", "devices", "kind", "arithmetic", "source"]
        widths = [max(len(h), *(len(x[i]) for x in rows)) for i, h in enumerate(head)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(head, widths)).rstrip()]
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
        return "\n".join(lines) + "\n\n" + PRESET_LEGEND
    nw = min(max(len(r.name) for r in recs), 40)   # a longer name takes a line of its own
    kw = max(len("kind"), *(len(r.kind) for r in recs))
    aw = max(width - (2 + nw + 2 + kw + 2), 24)
    lines = [f"  {'name'.ljust(nw)}  {'kind'.ljust(kw)}  arithmetic".rstrip()]
    arch = None
    for r in recs:
        if r.architecture != arch:
            arch = r.architecture
            lines.append(f"{arch}: {', '.join(ARCHITECTURES.get(arch, r.devices))}")
        parts = _wrap(arithmetic(r), aw)
        mark = "*" if r.default else " "
        if len(r.name) > nw:
            lines.append(f"{mark} {r.name}")
            lines.append(f"  {''.ljust(nw)}  {r.kind.ljust(kw)}  {parts[0]}".rstrip())
        else:
            lines.append(f"{mark} {r.name.ljust(nw)}  {r.kind.ljust(kw)}  {parts[0]}".rstrip())
        lines += [" " * (2 + nw + 2 + kw + 2) + more for more in parts[1:]]
    return "\n".join(lines) + "\n\n" + PRESET_LEGEND


class PresetTable(list):
    """List of dict rows (one per preset) whose ``repr`` is the preset table
    (:func:`render_presets`, with :data:`PRESET_LEGEND`)."""

    COLUMNS = ("name", "devices", "kind", "parameters", "default", "source")

    def __repr__(self) -> str:
        recs = [r for r in (by_name(str(row["name"])) for row in self) if r is not None]
        return render_presets(recs)


def presets() -> PresetTable:
    """Every preset record as a table row (dict): name, architecture, devices,
    instruction, variant, default, kind, ``parameters`` (only those its kind reads:
    :func:`read_parameters`), the flat arithmetic fields of :class:`Model`, the source and
    what the hardware does with wider inputs."""
    rows = PresetTable()
    for r in _RECORDS:
        row: dict[str, Any] = {"name": r.name, "architecture": r.architecture,
                               "devices": ", ".join(r.devices), "instruction": r.instruction,
                               "variant": r.variant, "default": r.default}
        row.update(r.params)
        row["parameters"] = read_parameters(r)
        row["source"] = r.source
        row["wider_inputs"] = r.wider_inputs
        rows.append(row)
    return rows


def evidence_table() -> list[dict[str, Any]]:
    """One row per (preset, evidence record): ``preset`` (its name), the fields of
    :class:`~workbench.evidence.Evidence` and its ``summary``, in catalogue order."""
    return [{"preset": r.name, **e.as_dict(), "summary": e.summary()} for r in _RECORDS for e in r.evidence]


def records() -> tuple[Preset, ...]:
    """The Preset records themselves."""
    return tuple(_RECORDS)


def _known_format(fmt: str | _formats.FloatFormat | _formats.IntFormat, what: str) -> str:
    """The registered name of ``fmt``: a FloatFormat object is registered under its name
    (:func:`workbench.formats.register_format`; a name taken by another encoding is a
    ValueError), a name must be known."""
    if isinstance(fmt, _formats.FloatFormat):
        return _formats.register_format(fmt).name
    try:
        return _fmt_name(fmt)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what}={fmt!r}: {exc}; a format that does not exist yet can be passed as an object, "
                         f"workbench.FloatFormat.custom(name, exp_bits=..., man_bits=...), or registered with "
                         f"workbench.formats.register_format") from None


def _check_alias(name: str, value: Any, given: str) -> None:
    """The bound of parameter ``name`` (:data:`~workbench.engine.model.PARAM_BOUNDS`) on
    ``value``, computed from the Khattak-Mikaitis argument ``given`` so that the error
    names it; a value that is not an int is left to the Model's type check."""
    if isinstance(value, int) and not isinstance(value, bool):
        PARAM_BOUNDS[name].check(value, given)


def custom_model(in_format: str | _formats.FloatFormat, out_format: str | _formats.FloatFormat = "fp32", *,
                 kind: str = "t-fdpa", L: int | None = None,
                 F: int | None = None, rounding: str | None = None, fma: int | None = None,
                 neab: int | None = None, frmode: str | None = None, **params: Any) -> Model:
    """A user-defined unit (Khattak & Mikaitis' CustomTC, Section IV-C).

    Takes the engine's parameter names (L, F, rounding, sticky, c_position,
    zero_exponent, interleave, F2, alignment_rounding, ...; see
    :mod:`workbench.engine.model`) or
    Khattak-Mikaitis' names: ``fma`` (= L), ``neab`` (F = output precision - 1 + neab),
    ``frmode`` (= rounding).  Giving both names of one parameter is an error.  Every
    integer parameter is held to its bound (:data:`workbench.engine.model.PARAM_BOUNDS`:
    ``1 <= L <= 4096``, ``0 <= F <= 56``, ...); a ValueError names the parameter (and
    the Khattak-Mikaitis argument it came from), its value, the bound and the reason.

    Every format (``in_format``, ``out_format``, ``result_format``, ``scale_format``)
    may be a registered name or a :class:`~workbench.formats.FloatFormat` object such as
    ``FloatFormat.custom("e6m9", exp_bits=6, man_bits=9)``, which is registered under its
    name so that the model (and :func:`workbench.gemm`, the algorithms, sweeps and
    ``explain``) can name it.
    """
    out = _formats.number_format(_known_format(out_format, "out_format"))
    if fma is not None:
        if L is not None:
            raise ValueError("give L or fma (its Khattak-Mikaitis name), not both")
        L = fma
        _check_alias("L", L, f"fma={fma}")
    if neab is not None:
        if F is not None:
            raise ValueError("give F or neab (F = out precision - 1 + neab), not both")
        if not isinstance(out, _formats.FloatFormat):
            raise ValueError(f"neab={neab!r}: {out.name} is an integer format; neab sets the alignment window of "
                             "floating-point units")
        F = out.p - 1 + neab
        _check_alias("F", F, f"neab={neab}")
    if frmode is not None:
        if rounding is not None:
            raise ValueError("give rounding or frmode (its Khattak-Mikaitis name), not both")
        rounding = frmode.lower()
    for name in params:
        if name not in PARAM_NAMES:
            raise unknown_name("model parameter", name, (*PARAM_NAMES, "fma", "neab", "frmode"))
    for name in ("result_format", "scale_format", "b_format"):
        if params.get(name) is not None:
            params[name] = _known_format(params[name], name)
    kw: dict[str, Any] = {"kind": kind, "in_format": _known_format(in_format, "in_format"), "out_format": out.name}
    if L is not None:
        kw["L"] = L
    if F is not None:
        kw["F"] = F
    if rounding is not None:
        kw["rounding"] = rounding
    kw.update(params)
    return Model(**kw)
