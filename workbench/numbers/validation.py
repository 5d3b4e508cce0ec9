"""The input gate: how every public function of the workbench accepts numbers and names.

Values travel through the workbench as float64 arrays (every value of every format
here is exactly a float64).  :func:`real_array` is the one door data comes through:

* float64 passes unchanged; float16, float32, bool and the ml_dtypes formats
  (bfloat16, float8_*, ...) widen exactly;
* integers (numpy or Python, of any size, ``2**70`` included) are accepted when they
  are exactly a float64 value and refused otherwise;
* ``long double`` values are accepted when they are exactly a float64 value and
  refused otherwise: converting them would round once, and rounding the result to a
  narrow format would round again (``1 + 2^-11 + 2^-60`` would give ``1.0`` in fp16
  instead of ``1 + 2^-10``);
* Python ``Fraction`` and ``Decimal`` values (in object arrays) likewise: exact
  float64 values pass, others are refused;
* complex numbers, strings, ``None``, dates and other objects are refused.

A refusal is a TypeError (wrong kind of data) or ValueError (a number that is not a
float64 value), naming the argument, the position and the offending value, and
saying what is accepted.  Nothing is ever rounded silently.

:func:`unknown_name` builds the error for a name that is not in a table, with the
close matches ("did you mean ...?").
"""
from __future__ import annotations

import argparse
import difflib
import math
from collections.abc import Iterable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["real_array", "real_matrix", "unknown_name", "ACCEPTED", "cli_positive_int", "cli_count", "cli_name",
           "cli_float", "cli_float_list", "cli_positive_float"]

#: what :func:`real_array` accepts, for error messages
ACCEPTED = ("real numbers that are exactly float64 values: float16/32/64, bool, int, "
            "ml_dtypes floats, and exact long double, Python int, Fraction or Decimal values")


def _where(name: str, index: tuple[int, ...]) -> str:
    return f"{name}[{', '.join(map(str, index))}]" if index else name


def _custom_float(dtype: np.dtype) -> bool:
    """A float type numpy knows only as raw bytes (ml_dtypes' bfloat16, float8_*, ...)."""
    letter = dtype.kind
    return letter == "V" and "float" in str(dtype)


def _exact_float(v: Any) -> float | None:
    """``v`` as a float64 when it is exactly one, else None; TypeError for non-numbers."""
    if isinstance(v, (bool, np.bool_)):
        return float(v)
    if isinstance(v, (float, np.float64, np.float32, np.float16)):
        return float(v)
    if isinstance(v, (int, np.integer)):
        v = int(v)
        try:
            f = float(v)
        except OverflowError:
            return None
        return f if f == v else None  # int == float compares exactly
    if isinstance(v, np.floating):  # long double
        f = float(v)
        return f if not math.isfinite(f) or np.longdouble(f) == v else None
    if isinstance(v, Fraction):
        try:
            f = float(v)
        except OverflowError:
            return None
        return f if Fraction(f) == v else None
    if isinstance(v, Decimal):
        if v.is_nan():
            return math.nan
        if v.is_infinite():
            return math.copysign(math.inf, 1 if v > 0 else -1)
        f = float(v)
        return f if math.isfinite(f) and Decimal(f) == v else None
    if isinstance(v, np.generic) and _custom_float(v.dtype):
        return float(v)  # ml_dtypes scalars (bfloat16, float8_*, ...) widen exactly
    raise TypeError(type(v).__name__)


def _not_float64(name: str, index: tuple[int, ...], value: Any, kind: str) -> ValueError:
    return ValueError(
        f"{_where(name, index)} = {value!r} ({kind}) is not exactly a float64 value; "
        "converting it would round it. Round it explicitly first (to float64 or to the "
        "target format), or pass float64 data"
    )


def _from_objects(arr: np.ndarray, name: str) -> np.ndarray:
    out = np.empty(arr.shape, dtype=np.float64)
    for index, v in np.ndenumerate(arr):
        try:
            f = _exact_float(v)
        except TypeError:
            raise TypeError(
                f"{_where(name, index)} = {v!r} ({type(v).__name__}) is not a real number; "
                f"expected {ACCEPTED}"
            ) from None
        if f is None:
            raise _not_float64(name, index, v, type(v).__name__)
        out[index] = f
    return out


def real_array(x: Any, name: str, *, ndim: Iterable[int] | None = None, finite: bool = False) -> np.ndarray:
    """``x`` as a float64 array holding exactly the same values, or a clear refusal.

    Parameters
    ----------
    x:
        Array-like of real numbers (see the module docstring for what is accepted).
    name:
        The argument's name, used in error messages (``"A"``, ``"x"``).
    ndim:
        Accepted numbers of dimensions (e.g. ``(2,)``); None accepts any.
    finite:
        Refuse NaN and infinities (a ValueError naming the first one).

    float64 input is returned without a copy.
    """
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} = {x!r} is a string; expected {ACCEPTED}")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise TypeError(f"{name} cannot be read as an array of numbers ({exc}); expected {ACCEPTED}") from None
    letter = arr.dtype.kind
    if arr.dtype == np.float64:
        out = arr
    elif letter in "fb" and arr.dtype.itemsize <= 8:
        out = arr.astype(np.float64)
    elif letter == "f":  # long double
        out = arr.astype(np.float64)
        bad = (out.astype(arr.dtype) != arr) & np.isfinite(arr)
        if bad.any():
            index = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad)[0]), arr.shape))
            raise _not_float64(name, index, arr[index], "long double")
    elif letter in "iu":
        out = arr.astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad = out.astype(arr.dtype) != arr
        if arr.dtype.itemsize >= 8:  # 2**63 (and 2**64) round-trip through float64 as int64 overflow;
            bad |= out >= 2.0 ** (63 if letter == "i" else 64)      # -2**63 is exact (hypothesis found it refused)
        if bad.any():
            index = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad)[0]), arr.shape))
            raise _not_float64(name, index, int(arr[index]), "integer")
    elif letter == "O":
        out = _from_objects(arr, name)
    elif letter == "c":
        raise TypeError(f"{name} has complex dtype {arr.dtype}; expected {ACCEPTED}")
    elif _custom_float(arr.dtype):  # ml_dtypes: bfloat16, float8_*, ... widen exactly
        out = arr.astype(np.float64)
    else:
        raise TypeError(f"{name} has dtype {arr.dtype}; expected {ACCEPTED}")
    if ndim is not None:
        ndim = tuple(ndim)
        if out.ndim not in ndim:
            raise ValueError(f"{name} must have {' or '.join(map(str, ndim))} dimension(s); got shape {out.shape}")
    if finite and out.size and not np.isfinite(out).all():
        index = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(~np.isfinite(out))[0]), out.shape))
        raise ValueError(f"{_where(name, index)} = {float(out[index])!r}; expected finite values (no NaN or Inf)")
    return out


def real_matrix(x: Any, name: str, *, finite: bool = False) -> np.ndarray:
    """:func:`real_array` for a 2-D operand (a ValueError names the shape otherwise)."""
    return real_array(x, name, ndim=(2,), finite=finite)


def unknown_name(what: str, name: Any, known: Iterable[str], *, extra: str = "") -> ValueError:
    """The ValueError for ``name`` not found among ``known`` (a table of ``what``s):
    it quotes the name, suggests the close matches and lists what exists."""
    known = list(known)
    close = difflib.get_close_matches(str(name).strip().lower(), [k.lower() for k in known], n=3, cutoff=0.6)
    by_lower = {k.lower(): k for k in known}
    hint = f" (did you mean {' or '.join(repr(by_lower[c]) for c in close)}?)" if close else ""
    return ValueError(f"unknown {what} {name!r}{hint}; known: {', '.join(known)}{extra}")


# ------------------------------------------------------------------ command-line values
# argparse ``type=`` functions: a bad value is reported by argparse as
# "argument --x: <message>" and the command exits with status 2 before doing anything.
def _int(text: str, least: int, what: str) -> int:
    try:
        v = int(text.strip(), 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; expected {what}") from None
    if v < least:
        raise argparse.ArgumentTypeError(f"{v} is out of range; expected {what}")
    return v


def cli_positive_int(text: str) -> int:
    """An integer >= 1."""
    return _int(text, 1, "a positive integer")


def cli_count(text: str) -> int:
    """An integer >= 0."""
    return _int(text, 0, "an integer >= 0")


def cli_name(text: str) -> str:
    """A non-empty name (surrounding blanks removed)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty name; expected a name")
    return text.strip()


def cli_float(text: str) -> float:
    """One decimal or hex float literal (``0.5``, ``0x1p-24``, ``inf``, ``nan``)."""
    tok = text.strip()
    if "," in tok:
        raise argparse.ArgumentTypeError(f"{text!r} is a list; expected one number")
    try:
        return float.fromhex(tok) if "0x" in tok.lower() else float(tok)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{tok!r} is not a decimal or hex float literal") from None


def cli_float_list(text: str) -> list[float]:
    """Comma-separated decimal or hex float literals (``1,0x1p-24,-2.5``), at least one."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty list; expected comma-separated numbers")
    return [cli_float(tok) for tok in text.split(",")]


def cli_positive_float(text: str) -> float:
    """A finite number > 0."""
    v = cli_float(text)
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number > 0")
    return v
