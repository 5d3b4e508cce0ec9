"""The window-edge inputs of the probes (``workbench.probes.differential.window_edges``):
units whose alignment window differs by one bit must part on them, though they part on
about one random input in 20,000 of the other distributions (the slow random-unit suite
found such pairs reported as indistinguishable, or the wrong one verified)."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from workbench import formats
from workbench.engine.model import ROUNDINGS, Model
from workbench.probes import from_model
from workbench.probes.differential import window_edges, windows_of


@st.composite
def window_pairs(draw: st.DrawFn) -> tuple[dict, str]:
    """T-FDPA units (c early) and F: a tiny product at the window's edge always decides a tie
    or a directed rounding there.  (TR-/GTR-FDPA's F2 is not always observable in one block:
    with RD and F2 - F > 1 the cut bit never reaches the output; the GTR unit the slow suite
    found is an example below.)"""
    p = dict(kind="t-fdpa", in_format=draw(st.sampled_from(["fp8_e4m3", "fp8_e5m2", "fp16", "bf16"])),
             out_format=draw(st.sampled_from(["fp16", "fp32"])), L=2 ** draw(st.integers(1, 4)),
             F=draw(st.integers(12, 34)), rounding=draw(st.sampled_from(ROUNDINGS)))
    return p, "F"


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(window_pairs())
@example((dict(kind="t-fdpa", in_format="fp8_e4m3", out_format="fp16", L=2, F=30, rounding="rne"), "F"))
@example((dict(kind="gtr-fdpa", in_format="fp8_e4m3fnuz", out_format="fp32", L=8, F=30, F2=30, rounding="rd"), "F2"))
def test_units_one_window_bit_apart_part_on_window_edges(pair):
    params, key = pair
    narrow = Model(**params)
    wide = Model(**{**params, key: params[key] + 1})
    fin, fout = formats.format(params["in_format"]), formats.format(params["out_format"])
    rng = np.random.default_rng(0)
    a, b, c = window_edges(rng, fin, fout, windows_of([narrow.params]), 3000, min(params["L"], 4))
    built = (a != 0).any(axis=1)
    # where the formats' ranges cannot put a product at the window's edge below the largest
    # term (fp8 inputs, F past 32) nothing is built; otherwise the two units must part
    event("rows built" if built.any() else "no row: the edge is out of the formats' range")
    if built.any():
        differ = from_model(narrow).dots(a, b, c) != from_model(wide).dots(a, b, c)
        assert differ.any(), (params, key, int(built.sum()))


def test_windows_of_reads_the_windowed_kinds_only():
    assert windows_of([dict(kind="fma", F=24), dict(kind="e-fdpa", F=3), dict(kind="t-fdpa", F=30),
                       dict(kind="gtr-fdpa", F=30, F2=31)]) == [30, 31]
