"""Discriminating inputs between models and algorithms (Valpey et al. 2025, Sections 4-6).

* :func:`discriminate` - the simplest input on which two models of a matrix unit give
  different bits (structured + randomised search, optional exact z3 back end);
* :func:`find_worse` - inputs on which one algorithm is less accurate than another on a
  given unit (Valpey et al. Property 5, Table 5);
* property checks (:func:`check_order_independence`, :func:`check_monotonicity`,
  :func:`check_carry_bits`) and the pairwise table over presets
  (:func:`discrimination_table`).

Sits above the engine, the presets and the algorithms; nothing lower imports it.
"""

from __future__ import annotations

from .search import (
    Discrimination,
    DiscriminationNotFound,
    DiscriminationOutcome,
    discriminate,
    discriminate_outcome,
    model_label,
    resolve_model,
)
from .properties import (
    PropertyReport,
    check_carry_bits,
    check_monotonicity,
    check_order_independence,
    fixed_point_accumulate,
)
from .table import discrimination_table
from .worse import WorseInput, exact_errors, find_worse

__all__ = [
    "PropertyReport", "check_carry_bits", "check_monotonicity", "check_order_independence",
    "fixed_point_accumulate", "discrimination_table", "WorseInput", "exact_errors", "find_worse",
    "Discrimination", "DiscriminationNotFound", "DiscriminationOutcome", "discriminate",
    "discriminate_outcome", "model_label", "resolve_model",
]
