"""Presets as data: which arithmetic each device's matrix instructions perform.

One :class:`Preset` record per (architecture, instruction, input format, output
format[, variant]), holding the arithmetic parameters of :class:`workbench.engine.Model`
(it *is* a Model, so it can be passed to :func:`workbench.gemm` directly) plus where
the numbers come from.  The records are data: the package's TOML files
``workbench/units/presets/<architecture>.toml`` (one ``[[preset]]`` table each, the keys of
a unit file's ``[unit]`` table plus the provenance keys :data:`PROVENANCE_KEYS`), listed in
order by ``presets/architectures.toml`` and read once at import; adding a preset is adding
a table (docs/howto/add-preset.md).  Nothing here computes; the engine knows no preset.

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

import tomllib
from dataclasses import dataclass, fields
from importlib import resources
from typing import Any

from ..numbers import formats as _formats
from ..engine.model import PARAM_BOUNDS, PARAM_NAMES, Model
from .evidence import Evidence, stored as _stored_evidence
from ..numbers.validation import unknown_name

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
        """What this preset was checked against and how much (:mod:`workbench.units.evidence`):
        the GPU vectors (per device and set), the real-GPU witness, the MMA-Sim
        differential and the papers' stated results, with counts derived from the test
        data; or one ``"unchecked"`` record saying what the preset is assumed from."""
        checks = _stored_evidence().get(self.name, ())
        if self.assumed_from:
            return checks + (Evidence(kind="unchecked", what=self.assumed_from),)
        return checks


Preset.__doc__ = (Preset.__doc__ or "") + "\n    The preset table's legend::\n\n" + "\n".join(
    "        " + line if line else "" for line in PRESET_LEGEND.splitlines()) + "\n"

#: the catalogue's files: ``presets/architectures.toml`` lists the architectures in order,
#: ``presets/<architecture>.toml`` holds each one's presets (docs/howto/add-preset.md)
CATALOGUE_FOLDER = "presets"
#: the layout version every catalogue file declares (``workbench_catalogue = 1``)
CATALOGUE_LAYOUT = 1
#: the keys of a ``[[preset]]`` table besides the unit-file ``[unit]`` keys (``PARAM_NAMES``)
PROVENANCE_KEYS = ("instruction", "variant", "default", "devices", "source", "notes", "assumed_from")
_ARCHITECTURE_KEYS = ("name", "title", "devices", "aliases")


def _catalogue_file(name: str) -> dict[str, Any]:
    """One catalogue file of the package, parsed (TOML: data, never code) and its layout checked."""
    text = resources.files(__package__).joinpath(CATALOGUE_FOLDER, name).read_text(encoding="utf-8")
    data = tomllib.loads(text)
    if data.get("workbench_catalogue") != CATALOGUE_LAYOUT:
        raise ValueError(f"catalogue file {name}: workbench_catalogue = {data.get('workbench_catalogue')!r}, "
                         f"expected {CATALOGUE_LAYOUT}")
    return data


def _known_keys(where: str, table: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; expected some of {', '.join(allowed)}")


def _preset_from(arch: str, devices: tuple[str, ...], table: dict[str, Any], wider: dict[str, str],
                 where: str) -> Preset:
    """A ``[[preset]]`` table of ``presets/<arch>.toml`` as its :class:`Preset` (the Model's
    own checks validate the arithmetic)."""
    _known_keys(where, table, PARAM_NAMES + PROVENANCE_KEYS)
    for key in ("instruction", "kind", "in_format", "out_format", "source"):
        if key not in table:
            raise ValueError(f"{where}: missing key {key!r}")
    variant = table.get("variant")
    name = f"{arch}/{table['instruction']}/{table['in_format']}->{table['out_format']}" + (f"/{variant}" if variant else "")
    if table["in_format"] not in wider:
        raise ValueError(f"{where} ({name}): [wider_inputs] has no entry for {table['in_format']!r}")
    try:
        return Preset(name=name, architecture=arch, devices=tuple(table.get("devices", devices)),
                      instruction=table["instruction"], variant=variant, default=table.get("default", True),
                      source=table["source"], notes=table.get("notes", ""), wider_inputs=wider[table["in_format"]],
                      assumed_from=table.get("assumed_from", ""),
                      **{k: table[k] for k in PARAM_NAMES if k in table})
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where} ({name}): {exc}") from None


def _load_catalogue() -> tuple[dict[str, tuple[str, ...]], dict[str, str], list[Preset]]:
    """The architectures (name -> devices), their aliases and every preset, read from the
    package's catalogue files in the order ``presets/architectures.toml`` gives."""
    architectures: dict[str, tuple[str, ...]] = {}
    aliases: dict[str, str] = {}
    for i, entry in enumerate(_catalogue_file("architectures.toml").get("architecture", ())):
        _known_keys(f"architectures.toml, architecture {i + 1}", entry, _ARCHITECTURE_KEYS)
        architectures[entry["name"]] = tuple(entry["devices"])
        aliases.update(dict.fromkeys(entry.get("aliases", ()), entry["name"]))
    records: list[Preset] = []
    for arch, devices in architectures.items():
        data = _catalogue_file(f"{arch}.toml")
        _known_keys(f"{arch}.toml", data, ("workbench_catalogue", "architecture", "preset", "wider_inputs"))
        if data.get("architecture") != arch:
            raise ValueError(f"{arch}.toml: architecture = {data.get('architecture')!r}, expected {arch!r}")
        wider = data.get("wider_inputs", {})
        records += [_preset_from(arch, devices, table, wider, f"{arch}.toml, preset {i + 1}")
                    for i, table in enumerate(data.get("preset", ()))]
    return architectures, aliases, records


#: architecture -> its devices (``presets/architectures.toml``)
ARCHITECTURES: dict[str, tuple[str, ...]]
_ARCH_ALIASES: dict[str, str]
_RECORDS: list[Preset]
ARCHITECTURES, _ARCH_ALIASES, _RECORDS = _load_catalogue()
DEVICES: dict[str, str] = {d.lower(): a for a, ds in ARCHITECTURES.items() for d in ds}


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
    :class:`~workbench.units.evidence.Evidence` and its ``summary``, in catalogue order."""
    return [{"preset": r.name, **e.as_dict(), "summary": e.summary()} for r in _RECORDS for e in r.evidence]


def records() -> tuple[Preset, ...]:
    """The Preset records themselves."""
    return tuple(_RECORDS)


def _known_format(fmt: str | _formats.FloatFormat | _formats.IntFormat, what: str) -> str:
    """The registered name of ``fmt``: a FloatFormat object is registered under its name
    (:func:`workbench.numbers.formats.register_format`; a name taken by another encoding is a
    ValueError), a name must be known."""
    if isinstance(fmt, _formats.FloatFormat):
        return _formats.register_format(fmt).name
    try:
        return _fmt_name(fmt)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what}={fmt!r}: {exc}; a format that does not exist yet can be passed as an object, "
                         f"workbench.FloatFormat.custom(name, exp_bits=..., man_bits=...), or registered with "
                         f"workbench.numbers.formats.register_format") from None


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
    may be a registered name or a :class:`~workbench.numbers.formats.FloatFormat` object such as
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
