"""The documentation's text (issue 55, item 4): no page promises what has already landed
(or what nobody tracks: TODO), the sweep-file page's key tables are the keys the parser
accepts, and the generated catalogue pages show only the parameters each kind reads, as
``workbench presets`` does.  Plain-text checks of the Markdown sources; no Sphinx needed."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from workbench.units import catalogue
from workbench.sweep import spec

ROOT = Path(__file__).resolve().parents[1]
#: the Markdown a reader meets: the site's sources (not its build or generated pages), the
#: README and the experiment-file schema
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if not {"_build", "generated"} & set(p.parts)) + [
    ROOT / "README.md", ROOT / "experiments" / "README.md"]
#: text that says something is still to come: stale once it has come, and never checked
STALE = re.compile(
    r"\b(?:is|are) coming\b|\bcoming soon\b|\buntil (?:it|they|this|that|[\w'-]+) lands?\b|\bwill land\b|"
    r"\b(?:once|when) (?:it|they|this|that) lands?\b|\bnot yet landed\b|\byet to land\b|\bhas not landed\b|"
    r"\bnot (?:yet )?implemented yet\b|\bnot yet implemented\b|\bin a future (?:release|version)\b|"
    r"\bplanned for\b", re.IGNORECASE)
MARKERS = re.compile(r"\b(?:TODO|FIXME|TBD)\b")


def _stale_lines(text: str) -> list[tuple[int, str]]:
    return [(i, line.strip()) for i, line in enumerate(text.splitlines(), 1)
            if STALE.search(line) or MARKERS.search(line)]


@pytest.mark.parametrize("line", [
    "Saving is issue 36's item; until it lands, keep the arguments.",
    "`--save` is coming.", "Support for MI355X is coming soon.", "This will land in 0.3.",
    "The feature has not yet landed.", "TODO: document the flag.", "FIXME", "Sizes: TBD.",
])
def test_the_scan_finds_stale_text(line):
    assert _stale_lines(line) == [(1, line)]


@pytest.mark.parametrize("line", [
    "The kernels have not yet run on a GPU.", "`workbench probe --save` writes a unit file.",
    "becoming", "todos are lower case here", "It lands on the CPU's bits.",
])
def test_the_scan_leaves_plain_text_alone(line):
    assert _stale_lines(line) == []


def test_no_page_promises_what_is_to_come():
    assert len(PAGES) > 10 and all(p.is_file() for p in PAGES)
    found = [f"{p.relative_to(ROOT)}:{i}: {line}" for p in PAGES for i, line in _stale_lines(p.read_text())]
    assert not found, "stale text (say what the tool does now):\n" + "\n".join(found)


def _table_keys(text: str, heading: str) -> set[str]:
    """The backticked names in the first column of the table under ``## heading``."""
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| `")]
    assert rows, f"no table under ## {heading}"
    return {name.strip("[]") for row in rows for name in re.findall(r"`([^`]+)`", row.split("|")[1])}


def test_sweep_file_page_lists_every_task_key_the_parser_accepts():
    text = (ROOT / "experiments" / "README.md").read_text()
    assert _table_keys(text, "Task keys") == set(spec.TASK_KEYS)
    assert _table_keys(text, "Top-level keys") == set(spec.TOP_KEYS)


def test_sweep_file_page_is_the_experiments_readme():
    page = ROOT / "docs" / "guide" / "sweep-files.md"
    (target,) = re.findall(r"```\{include\} (\S+)\n```", page.read_text())
    assert (page.parent / target).resolve() == (ROOT / "experiments" / "README.md").resolve()
    assert "sweep-files" in (ROOT / "docs" / "guide" / "index.md").read_text().split()


@pytest.fixture(scope="module")
def catalogue_pages(tmp_path_factory) -> dict[str, str]:
    """The catalogue pages docs/_ext/generate.py writes, by architecture (into a temporary folder)."""
    mod_spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "_ext" / "generate.py")
    generate = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(generate)
    generate.OUT = tmp_path_factory.mktemp("generated")
    archs = generate.catalogue_pages()
    return {a: (generate.OUT / "catalogue" / f"{a}.md").read_text() for a in archs}


def _parameter_table(page: str, name: str) -> dict[str, str]:
    section = page.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
    rows = section.split("| parameter | value |\n|---|---|\n", 1)[1].split("\n\n", 1)[0]
    return dict(tuple(c.strip() for c in row.strip("|").split("|", 1)) for row in rows.splitlines())


def test_catalogue_pages_show_only_the_parameters_a_kind_reads(catalogue_pages):
    kinds = set()
    for rec in catalogue.records():
        table = _parameter_table(catalogue_pages[rec.architecture], rec.name)
        read = catalogue.read_parameters(rec)
        fixed = {"rounding"} if rec.operation.fixed_rounding is not None and "rounding" not in read else set()
        assert set(table) == {"kind", "in_format", "out_format", *read, *fixed}, rec.name
        assert all(table[k] == ("none" if v is None else str(v)) for k, v in read.items()), rec.name
        arithmetic = " ".join(catalogue.arithmetic(rec))
        assert f"| {rec.kind} | {arithmetic} |" in catalogue_pages[rec.architecture], rec.name
        kinds.add(rec.kind)
    assert {"fma", "ftz-addmul", "t-fdpa"} <= kinds


def test_fma_chain_pages_show_no_alignment_parameters(catalogue_pages):
    rec = catalogue.by_name("hopper/dmma/fp64->fp64")
    assert rec.kind == "fma" and rec.F is not None          # set on the record, never read by the kind
    table = _parameter_table(catalogue_pages["hopper"], rec.name)
    assert "F" not in table and table["rounding"] == "RNE/FMA (fixed by the kind)"
