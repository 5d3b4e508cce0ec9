"""Pairwise discriminating inputs across presets (plain data for the discrepancy
notebook): for every pair of presets with the same input and output formats, the
simplest input found on which they differ (Valpey et al. 2025 Section 4's
discriminating inputs, generated for every pair of published hypotheses)."""

from __future__ import annotations

from itertools import combinations
from typing import Any

from ..engine.model import Model
from .search import discriminate_outcome, model_label

__all__ = ["discrimination_table"]


def discrimination_table(presets: list[Any] | None = None, *, budget: int = 50_000, K: int | None = None,
                         seed: int = 0, include_variants: bool = True, progress: bool = True) -> list[dict[str, Any]]:
    """One row (dict) per pair of presets sharing input and output formats.

    Columns: ``model_a``, ``model_b``, ``in_format``, ``out_format``, ``status``
    (``"found"``, ``"none exists"``, ``"none found within budget"`` or
    ``"unsupported: <reason>"`` when the engine cannot run a model), ``K``, ``terms``
    (list of ``{"k", "a", "b"}``), ``c``, ``out_a``, ``out_b``, ``nonzero_terms``,
    ``candidates``.  ``presets``: Preset records or names (default: every record of
    :func:`workbench.units.catalogue.records`, variants included unless ``include_variants``
    is False, scaled MX/NVFP4 records excluded).  ``progress``: a bar on stderr counting
    the pairs (shown when the table takes more than a second).
    """
    from tqdm.auto import tqdm

    from ..units import catalogue
    from .search import resolve_model

    if presets is None:
        recs: list[Model] = [r for r in catalogue.records() if not r.operation.scaled
                and (include_variants or r.default)]
    else:
        recs = [resolve_model(p) for p in presets]
    rows: list[dict[str, Any]] = []
    pairs = [(ma, mb) for ma, mb in combinations(recs, 2)
             if (ma.in_format, ma.out_format) == (mb.in_format, mb.out_format)]
    for ma, mb in tqdm(pairs, desc="discrimination table", unit="pair", disable=not progress, delay=1.0):
        row: dict[str, Any] = {"model_a": model_label(ma), "model_b": model_label(mb),
                               "in_format": ma.in_format, "out_format": ma.out_format}
        try:
            out = discriminate_outcome(ma, mb, K=K, budget=budget, seed=seed)
        except ValueError as exc:  # a kind the engine does not implement
            row.update(status=f"unsupported: {exc}", K=None, terms=None, c=None, out_a=None, out_b=None,
                       nonzero_terms=None, candidates=0)
            rows.append(row)
            continue
        row["status"] = out.status
        row["candidates"] = out.candidates
        if out.result is not None:
            d = out.result.to_dict()
            row.update(K=d["K"], terms=d["terms"], c=d["c"], out_a=d["out_a"], out_b=d["out_b"],
                       nonzero_terms=d["nonzero_terms"])
        else:
            row.update(K=K, terms=None, c=None, out_a=None, out_b=None, nonzero_terms=None)
        rows.append(row)
    return rows
