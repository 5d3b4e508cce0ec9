"""Plain-text tables and text of the commands that print one (``formats``, ``experiments``,
``presets``), fitted to the terminal's width: what does not fit wraps, nothing is cut."""

from __future__ import annotations

import math
import re
import shutil
import textwrap
from collections.abc import Sequence

#: Columns of the output when ``COLUMNS`` is not set and the output is not a terminal.
DEFAULT_WIDTH = 100
#: Between two columns of a table.
_GAP = "  "
#: A line's text up to the description of a legend entry (``  L=n         block size ...``).
_ENTRY = re.compile(r"\s*\S.*?\s{2,}(?=\S)")


def terminal_width() -> int:
    """Columns to print in: ``COLUMNS`` if set, else the terminal's, else :data:`DEFAULT_WIDTH`."""
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


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


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken at spaces (inside a word
    only where the word is longer than ``width``)."""
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _header_pieces(name: str) -> list[str]:
    """A column name cut after each underscore: where its header may break."""
    return re.findall(r"[^_]*_|[^_]+", name)


def _wrap_header(name: str, width: int) -> list[str]:
    """A column name in lines of at most ``width`` characters, broken after underscores."""
    if len(name) <= width:
        return [name]
    return [line.replace("_ ", "_") for line in _wrap(" ".join(_header_pieces(name)), width)]


def _fit(natural: Sequence[int], floors: Sequence[Sequence[int]], room: int) -> list[int]:
    """Column widths that sum to at most ``room``: ``natural`` shrunk one character at a
    time where the most is left above the first of ``floors``, then above the next, then 1."""
    widths = list(natural)
    for floor in (*floors, [1] * len(widths)):
        while sum(widths) > room:
            slack = [w - f for w, f in zip(widths, floor)]
            i = max(range(len(widths)), key=slack.__getitem__)
            if slack[i] <= 0:
                break
            widths[i] -= 1
    return widths


def _row_lines(parts: Sequence[Sequence[str]], widths: Sequence[int]) -> list[str]:
    """One table row whose cells are given as lines: as many lines as its tallest cell."""
    return [_GAP.join((p[k] if k < len(p) else "").ljust(w) for p, w in zip(parts, widths)).rstrip()
            for k in range(max(len(p) for p in parts))]


def render_table(rows: Sequence[dict[str, object]], columns: Sequence[str], width: int | None = None) -> str:
    """Plain-text table of ``rows`` restricted to ``columns`` (used by several commands),
    at most ``width`` characters wide (default :func:`terminal_width`).

    When the cells do not fit on one line, the columns with the most room wrap: headers
    after an underscore, cells at spaces.  When even whole words do not fit, the table is
    printed in parts (blank line between), each with the first column (the key) and as
    many of the next columns as fit; a word is cut only where one column alone does not
    fit beside the key.  No text is dropped."""
    width = terminal_width() if width is None else width
    cells = [[_fmt_number(r[c]) for c in columns] for r in rows]
    natural = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    words = [max([1, *(len(w) for row in cells for w in row[i].split())]) for i in range(len(columns))]
    head_words = [max([w, *(len(p) for p in _header_pieces(c))]) for c, w in zip(columns, words)]
    parts = [[0]]
    for i in range(1, len(columns)):
        part = parts[-1]
        if len(part) > 1 and sum(head_words[j] for j in (*part, i)) + len(_GAP) * len(part) > width:
            parts.append([0, i])
        else:
            part.append(i)
    blocks = []
    for part in parts:
        widths = _fit([natural[i] for i in part], [[head_words[i] for i in part], [words[i] for i in part]],
                      width - len(_GAP) * (len(part) - 1))
        lines = _row_lines([_wrap_header(columns[i], w) for i, w in zip(part, widths)], widths)
        lines.append(_GAP.join("-" * w for w in widths))
        for row in cells:
            lines += _row_lines([_wrap(row[i], w) for i, w in zip(part, widths)], widths)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def fit_text(text: str, width: int | None = None, *, paragraphs: bool = False) -> str:
    """``text`` with each line longer than ``width`` (default :func:`terminal_width`)
    wrapped at spaces: its next lines are indented to the text after its first run of two
    spaces (a legend entry's description), or two more than the line when it is indented.

    ``paragraphs``: ``text`` is hard-wrapped prose and legend entries, reflowed when a
    line is too long: a line indented as the continuation of the one before joins it."""
    width = terminal_width() if width is None else width
    lines = text.splitlines()
    if all(len(line) <= width for line in lines):
        return "\n".join(lines)
    blocks: list[tuple[str, int]] = []      # (text, indentation of its next lines)
    for line in lines:
        lead = len(line) - len(line.lstrip())
        if paragraphs and blocks and line.strip() and blocks[-1][0].strip() and lead == blocks[-1][1]:
            blocks[-1] = (f"{blocks[-1][0]} {line.strip()}", lead)
            continue
        entry = _ENTRY.match(line)
        blocks.append((line, entry.end() if entry is not None and entry.end() <= width // 2
                       else lead + 2 * (lead > 0)))
    out: list[str] = []
    for block, indent in blocks:
        out += textwrap.wrap(block, width, subsequent_indent=" " * indent, break_on_hyphens=False) or [block]
    return "\n".join(out)
