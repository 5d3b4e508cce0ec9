"""Pages generated from the package at build time, into ``docs/generated/`` (git-ignored):

* ``catalogue/<architecture>.md`` - one page per architecture, each preset of
  :func:`workbench.units.catalogue.presets` with its instruction, variant, the parameters its kind
  reads (:func:`workbench.units.catalogue.read_parameters`, as ``workbench presets`` shows them),
  its source and its evidence (``Preset.evidence``: what it was checked against and how much);
* ``gallery.md`` - every figure of ``figures/`` written by a notebook, with the command that
  regenerates it (the notebook found by the figure's name in its paired script).

Nothing is typed by hand: a preset added to the catalogue gets its section, a figure added
by a notebook its gallery entry.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "generated"


def _cell(v: Any) -> str:
    return "-" if v is None else str(v).replace("|", "\\|")


def _parameters(rec: Any) -> list[tuple[str, Any]]:
    """The rows of a preset's parameter table: its kind and formats, then only the
    parameters its kind reads, as ``workbench presets --format json`` gives them
    (:func:`workbench.units.catalogue.read_parameters`; a value of None is shown as ``none``),
    and the rounding a kind fixes itself (the FMA chain's ``RNE/FMA``)."""
    from workbench.units import catalogue

    rows: list[tuple[str, Any]] = [("kind", rec.kind), ("in_format", rec.in_format), ("out_format", rec.out_format)]
    rows += [(k, "none" if v is None else v) for k, v in catalogue.read_parameters(rec).items()]
    if "rounding" not in dict(rows) and rec.operation.fixed_rounding is not None:
        rows.append(("rounding", f"{rec.operation.fixed_rounding} (fixed by the kind)"))
    return rows


def _evidence() -> dict[str, list[str]]:
    """Each preset's evidence records (``Preset.evidence``), one summary line each."""
    from workbench.units import catalogue

    out: dict[str, list[str]] = {}
    for row in catalogue.evidence_table():
        out.setdefault(row["preset"], []).append(row["summary"])
    return out


def catalogue_pages() -> list[str]:
    """Write the catalogue pages; return the architectures."""
    from workbench.units import catalogue

    rows = list(catalogue.presets())
    records = {rec.name: rec for rec in catalogue.records()}
    evidence = _evidence()
    archs = list(dict.fromkeys(r["architecture"] for r in rows))
    folder = OUT / "catalogue"
    folder.mkdir(parents=True, exist_ok=True)
    index = ["# Unit catalogue", "",
             "Every preset of the catalogue (`workbench presets`), one page per architecture, generated from "
             "`workbench.units.catalogue.presets()` when the site is built. A preset is data: the parameters of one "
             "elementary operation (see [Units and presets](../../guide/units.md)) and the paper and table they "
             "come from. *default* marks the preset `workbench.preset(device, in, out)` returns without "
             "`instruction=` or `variant=`.", "",
             "| architecture | devices | presets | input formats |", "|---|---|---|---|"]
    for arch in archs:
        mine = [r for r in rows if r["architecture"] == arch]
        devices = ", ".join(dict.fromkeys(d.strip() for r in mine for d in r["devices"].split(",")))
        fmts = ", ".join(dict.fromkeys(r["in_format"] for r in mine))
        index.append(f"| [{arch}]({arch}.md) | {devices} | {len(mine)} | {fmts} |")
        page = [f"# {arch}", "", f"Devices: {devices}. {len(mine)} presets. The arithmetic column is that of "
                "`workbench presets`: only the parameters each kind reads ([legend](index.md#legend)).", "",
                "| preset | instruction | variant | default | kind | arithmetic |", "|---|---|---|---|---|---|"]
        page += [f"| [{r['name']}](#{_anchor(r['name'])}) | {_cell(r['instruction'])} | {_cell(r['variant'])} | "
                 f"{'yes' if r['default'] else ''} | {r['kind']} | "
                 f"{_cell(' '.join(catalogue.arithmetic(records[r['name']])))} |" for r in mine]
        for r in mine:
            page += ["", f"({_anchor(r['name'])})=", f"## {r['name']}", "",
                     f"`workbench.preset({r['devices'].split(',')[0].strip()!r}, {r['in_format']!r}, "
                     f"{r['out_format']!r}" + (f", instruction={r['instruction']!r}" if r["instruction"] else "")
                     + (f", variant={r['variant']!r}" if r["variant"] else "") + ")`", "",
                     "| parameter | value |", "|---|---|"]
            page += [f"| {k} | {_cell(v)} |" for k, v in _parameters(records[r['name']])]
            page += ["", f"**Source.** {r['source']}"]
            if r.get("wider_inputs"):
                page += ["", f"**Wider inputs.** {r['wider_inputs']}"]
            page += ["", "**Evidence.**", ""] + [f"- {line}" for line in evidence.get(r["name"], ["none recorded"])]
        (folder / f"{arch}.md").write_text("\n".join(page) + "\n")
    index += ["", "## Legend", "", "The arithmetic column of the architecture pages, as `workbench presets` "
              "prints it:", "", "```text", catalogue.PRESET_LEGEND, "```"]
    index += ["", "```{toctree}", ":hidden:", "", *archs, "```"]
    (folder / "index.md").write_text("\n".join(index) + "\n")
    return archs


def _anchor(name: str) -> str:
    return "preset-" + "".join(c if c.isalnum() else "-" for c in name.lower())


def gallery_page() -> int:
    """Write the gallery; return the number of figures."""
    scripts = {p.stem: p.read_text() for p in sorted((ROOT / "notebooks").glob("*.py"))}
    folder = OUT / "gallery"
    folder.mkdir(parents=True, exist_ok=True)
    page = ["# Figure gallery", "",
            "The papers' figures as the notebooks regenerate them (the full-size files committed in `figures/`). "
            "Each command runs from a checkout or a pip-installed wheel; `--quick` instead of `--full` gives the "
            "small sizes in minutes (written to `figures/quick/`).", ""]
    n = 0
    for png in sorted((ROOT / "figures").glob("*.png")):
        owner = next((nb for nb, text in scripts.items() if f'"{png.stem}"' in text or png.stem == nb), None)
        if owner is None:      # not a notebook's figure (a screenshot)
            continue
        shutil.copyfile(png, folder / png.name)
        title = scripts[owner].split("# # ", 1)[1].splitlines()[0] if "# # " in scripts[owner] else owner
        page += [f"## {png.stem}", "", title, "", f"```bash\nworkbench reproduce --full --only {owner}\n```", "",
                 f"![{png.stem}](gallery/{png.name})", ""]
        n += 1
    (OUT / "gallery.md").write_text("\n".join(page))
    return n


def _generate(app: Any) -> None:
    catalogue_pages()
    gallery_page()


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _generate)
    return {"parallel_read_safe": True, "version": "1"}
