"""Plain-text tables of the commands that print one (``formats``, ``presets``)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def _fmt_number(v: object) -> str:
    """Numbers as the papers print them: powers of two as 2^k, others to 6 digits."""
    if v is None:
        return "-"
    if isinstance(v, float):
        mantissa, exponent = math.frexp(v)
        if mantissa == 0.5 and abs(exponent - 1) > 4:
            return f"2^{exponent - 1}"
        return f"{v:.6g}"
    return str(v)


def render_table(rows: Sequence[dict[str, object]], columns: Sequence[str]) -> str:
    """Plain-text table of ``rows`` restricted to ``columns`` (used by several commands)."""
    cells = [[_fmt_number(r[c]) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)
