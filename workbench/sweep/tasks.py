"""What runs on a worker: input generation, references, algorithms, one task -> one row.

The functions here are module-level and take plain data (dicts, arrays), so they
pickle to a process pool or a Dask worker.  Nothing raises out of
:func:`compute_reference` or :func:`run_task`: failures become values (an error
string in the row) so that one bad task never stops a sweep.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import socket
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import algorithms

from ..numbers import formats as _formats
from ..numbers import inputs as _inputs
from ..numbers.validation import unknown_name
from .measures import METRICS, Context

#: Columns that vary between runs of the same task (excluded when comparing tables).
TIMING_COLUMNS = ("elapsed_s", "cpu_s", "reference_s", "finished_at", "worker")


# ----------------------------------------------------------------- look-ups
def _import_object(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"{spec!r}: expected 'module:function'")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{spec!r} is not callable")
    return obj


def _numpy_algorithm(A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None, *, model: Any = None,
                     dtype: str = "float32", alpha: float = 1.0, beta: float = 1.0) -> np.ndarray:
    """Built-in "numpy": A @ B (+ C) with numpy in ``dtype`` (no MMA model; a baseline)."""
    dt = np.dtype(dtype)
    D = (A.astype(dt) @ B.astype(dt)) * dt.type(alpha)
    if C is not None:
        D = D + dt.type(beta) * C.astype(dt)
    return D.astype(np.float64)


def _gemm_algorithm(A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None, *, model: Any,
                    **params: Any) -> np.ndarray:
    """Built-in "gemm": one :func:`workbench.gemm` call on the task's model."""
    from ..matmul import product as matmul

    return matmul.gemm(A, B, C, model=model, **params)


#: Algorithms available without the algorithms package.
BUILTIN_ALGORITHMS: dict[str, Callable[..., np.ndarray]] = {
    "numpy": _numpy_algorithm,
    "gemm": _gemm_algorithm,
}


def resolve_algorithm(name: str) -> Callable[..., np.ndarray]:
    """``module:function``, else ``algorithms.ALGORITHMS[name]``, else a built-in."""
    if ":" in name:
        return _import_object(name)
    registry = algorithms.ALGORITHMS
    if name in registry:
        return registry[name]
    if name in BUILTIN_ALGORITHMS:
        return BUILTIN_ALGORITHMS[name]
    known = sorted({*registry, *BUILTIN_ALGORITHMS})
    raise unknown_name("algorithm", name, known, extra=" (or 'module:function')")


def validate_experiment(tasks: Sequence[Any]) -> None:
    """Check, before anything runs, everything of an expanded experiment that a task
    would otherwise only find out when it runs (:func:`invalid_tasks`).  The ValueError
    names every failing task (grid order; the first ten and a count) and suggests close
    names."""
    bad = invalid_tasks(tasks)
    if bad:
        shown = "; ".join(why for _, why in bad[:10])
        more = f"; and {len(bad) - 10} more problems" if len(bad) > 10 else ""
        n = len({i for i, _ in bad})
        raise ValueError(f"{n} of {len(tasks)} tasks are invalid (nothing ran; fix them or leave the "
                         f"combinations out with an exclude table): {shown}{more}")


def invalid_tasks(tasks: Sequence[Any]) -> list[tuple[int, str]]:
    """``(task index, reason)`` of every task that would fail before computing: its model
    (the preset exists for its formats, instruction and variant; a custom model's
    parameters are valid), its algorithm name and every ``params`` key (against the
    algorithm's signature).  Each distinct model and call is resolved once."""
    models: dict[str, str | None] = {}
    calls: dict[tuple[str, tuple[str, ...]], str | None] = {}
    bad: list[tuple[int, str]] = []
    for t in tasks:
        spec = t.spec
        where = f"task {t.index} ({spec['algorithm']}, m={spec['m']} k={spec['k']} n={spec['n']})"
        key = json.dumps({k: spec.get(k) for k in ("preset", "instruction", "variant", "model", "in_format",
                                                   "out_format", "formats")}, sort_keys=True)
        if key not in models:
            try:
                build_model(spec)
                models[key] = None
            except (TypeError, ValueError) as exc:
                models[key] = str(exc)
        call = (spec["algorithm"], tuple(sorted(spec.get("params", {}))))
        if call not in calls:
            try:
                _check_params(resolve_algorithm(spec["algorithm"]), spec, "")
                calls[call] = None
            except ValueError as exc:
                calls[call] = str(exc).removeprefix(": ")
        for why in (models[key], calls[call]):
            if why is not None:
                bad.append((t.index, f"{where}: {why}"))
    return bad


def _check_params(fn: Callable[..., Any], spec: Mapping[str, Any], where: str) -> None:
    """Every ``params`` key must be a keyword the algorithm takes (unless it takes ``**kwargs``)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: nothing to check
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return
    keywords = [n for n, p in sig.parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY or p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
                and n not in ("A", "B", "C", "model")]
    for name in spec.get("params", {}):
        if name not in keywords:
            err = unknown_name(f"params key of algorithm {spec['algorithm']!r}", name, keywords)
            raise ValueError(f"{where}: {err}")


def resolve_metric(name: str) -> Callable[[Context], Any]:
    """A built-in metric of :data:`METRICS` or ``module:function``."""
    if name in METRICS:
        return METRICS[name]
    if ":" in name:
        return _import_object(name)
    raise unknown_name("metric", name, sorted(METRICS), extra=" (or 'module:function')")


@functools.lru_cache(maxsize=64)
def _model(key: str) -> Any:
    spec = json.loads(key)
    from ..units import catalogue, unitfile
    from .spec import register_formats

    register_formats(spec.get("formats"))
    if spec.get("unit") is not None:    # read again here: it registers the unit's custom formats in this process
        unit = unitfile.load_unit(spec["unit"])
        if {k: v for k, v in unit.params.items() if v is not None and k not in ("in_format", "out_format")} != \
                spec["model"]:
            raise ValueError(f"unit file {spec['unit']!r} changed since the experiment was parsed")
        return unit
    if spec.get("model") is not None:
        return catalogue.custom_model(spec["in_format"], spec["out_format"], **spec["model"])
    if ":" in spec["preset"] or "->" in spec["preset"]:
        from ..units import resolve

        return resolve(spec["preset"], what="preset")
    return catalogue.preset(spec["preset"], spec["in_format"], spec["out_format"],
                            instruction=spec.get("instruction"), variant=spec.get("variant"))


def build_model(spec: Mapping[str, Any]) -> Any:
    """The task's MMA model (None if it names neither a preset nor a model); cached per process."""
    if spec.get("preset") is None and spec.get("model") is None:
        return None
    key = {k: spec.get(k) for k in ("preset", "instruction", "variant", "model", "unit", "in_format", "out_format",
                                    "formats")}
    return _model(json.dumps(key, sort_keys=True))


# ----------------------------------------------------------------- inputs
def _round(x: np.ndarray, target: str | None) -> np.ndarray:
    """The generated values in the task's format (``round_to``): rounded to nearest even
    in a floating-point format; in an integer format (the integer units' s8, u8, s32)
    rounded to the nearest integer, ties to even, and clamped to the format's range - the
    conversion the experiment asked for, as a quantiser does."""
    if target is None or target == "none":
        return x
    if _formats.is_int_format(target):
        f = _formats.int_format(target)
        return np.clip(np.rint(x), f.min, f.max)
    return _formats.round(x, target)


@functools.lru_cache(maxsize=4)
def _inputs_cached(key_json: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    key = json.loads(key_json)
    from .spec import register_formats

    register_formats(key.get("formats"))
    inp = dict(key["input"])
    gen = inp.pop("generator")
    round_to = inp.pop("round_to")
    c = inp.pop("c", None)
    c_round = None
    if c is not None:
        c = dict(c)
        c_round = c.pop("round_to")
    seed = [key["seed"], key["m"], key["k"], key["n"]]
    A, B, C = _inputs.matrices(gen, key["m"], key["k"], key["n"], seed, c=c, **inp)
    A, B = _round(A, round_to), _round(B, round_to)
    if C is not None:
        C = _round(C, c_round)
    for X in (A, B, C):
        if X is not None:
            X.setflags(write=False)
    return A, B, C


def make_inputs(key: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A, B, C of an input key (:func:`workbench.sweep.spec.input_key`), read-only, cached per process.

    The generator's seed is ``[seed, m, k, n]``, so every size gets its own stream
    and the same (seed, size) gives the same matrices whatever else the task says.
    """
    return _inputs_cached(json.dumps(key, sort_keys=True))


def _reference(A: np.ndarray, B: np.ndarray, C: np.ndarray | None, reference: str, alpha: float,
               beta: float) -> np.ndarray | None:
    if reference == "none":
        return None
    if reference == "float64":
        D = alpha * (A @ B)
        return D + beta * C if C is not None else D
    if reference == "exact":
        from ..numbers import exact

        return np.asarray(exact.gemm(A, B, C, alpha=alpha, beta=beta), dtype=np.float64)
    return np.asarray(_import_object(reference)(A, B, C, alpha=alpha, beta=beta), dtype=np.float64)


def compute_reference(key: Mapping[str, Any]) -> tuple[bool, Any, float]:
    """(ok, reference array or error text, seconds) for one input key; never raises."""
    t0 = time.perf_counter()
    try:
        A, B, C = make_inputs(key)
        ref = _reference(A, B, C, key["reference"], key["alpha"], key["beta"])
        return True, ref, time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - recorded, not hidden
        return False, f"reference failed: {type(exc).__name__}: {exc}", time.perf_counter() - t0


# ----------------------------------------------------------------- one task
def _flat(prefix: str, table: Mapping[str, Any], row: dict[str, Any]) -> None:
    for k, v in table.items():
        if isinstance(v, (dict, list)):
            v = json.dumps(v, sort_keys=True)
        row[f"{prefix}.{k}"] = v


def base_row(task_hash: str, input_hash: str, spec: Mapping[str, Any], experiment: str, index: int,
             reference: str) -> dict[str, Any]:
    """The parameter columns of a task's row (everything but metrics, error and timings)."""
    row: dict[str, Any] = {
        "task_hash": task_hash, "input_hash": input_hash, "experiment": experiment, "task_index": index,
        "algorithm": spec["algorithm"],
        "preset": spec.get("preset"), "instruction": spec.get("instruction"), "variant": spec.get("variant"),
        "model": json.dumps(spec["model"], sort_keys=True) if spec.get("model") is not None else None,
        "in_format": spec.get("in_format"), "out_format": spec.get("out_format"),
        "m": spec["m"], "k": spec["k"], "n": spec["n"], "seed": spec["seed"],
        "alpha": spec["alpha"], "beta": spec["beta"], "reference": reference,
        "generator": spec["input"]["generator"],
        "params": json.dumps(spec.get("params", {}), sort_keys=True),
        "input": json.dumps(spec["input"], sort_keys=True),
    }
    _flat("param", spec.get("params", {}), row)
    _flat("input", {k: v for k, v in spec["input"].items() if k != "generator"}, row)
    return row


def run_task(payload: Mapping[str, Any], reference: tuple[bool, Any, float] | None) -> dict[str, Any]:
    """Run one task and return its result row; errors are recorded in ``error``/``traceback``.

    ``payload`` holds ``hash``, ``input_hash``, ``spec``, ``experiment``, ``index``,
    ``reference`` (kind), ``metrics`` and ``input_key``; ``reference`` is the result
    of :func:`compute_reference` for that input (None when the kind is "none").
    """
    spec = payload["spec"]
    row = base_row(payload["hash"], payload["input_hash"], spec, payload["experiment"], payload["index"],
                   payload["reference"])
    row["experiment_digest"] = payload.get("digest")
    row["unit"] = row["unit_params"] = None
    row["error"] = None
    row["traceback"] = None
    t0 = time.perf_counter()
    c0 = time.process_time()
    try:
        if reference is not None and not reference[0]:
            raise RuntimeError(reference[1])
        from .spec import register_formats

        register_formats(spec.get("formats"))      # custom formats the task names, in this worker
        ref = reference[1] if reference is not None else None
        row["reference_s"] = float(reference[2]) if reference is not None else 0.0
        A, B, C = make_inputs(payload["input_key"])
        model = build_model(spec)
        if model is not None:                      # what ran: the resolved unit, not the name typed
            from ..units import unit_name

            row["unit"] = unit_name(model)
            row["unit_params"] = json.dumps(model.params, sort_keys=True)
            row["in_format"], row["out_format"] = model.in_format, model.out_format
        algorithm = resolve_algorithm(spec["algorithm"])
        kwargs = dict(spec.get("params", {}))
        if spec["alpha"] != 1.0:
            kwargs["alpha"] = spec["alpha"]
        if spec["beta"] != 1.0:
            kwargs["beta"] = spec["beta"]
        result = algorithm(A, B, C, model=model, **kwargs)
        D = np.asarray(result, dtype=np.float64)
        if D.shape != (spec["m"], spec["n"]):
            raise ValueError(f"algorithm {spec['algorithm']!r} returned shape {D.shape}, "
                             f"expected {(spec['m'], spec['n'])}")
        ctx = Context(D=D, reference=ref, A=A, B=B, C=C, task=spec, result=result)
        for name in payload["metrics"]:
            value = resolve_metric(name)(ctx)
            if isinstance(value, Mapping):
                for k, v in value.items():
                    row[f"{name}.{k}"] = _scalar(v)
            elif isinstance(value, np.ndarray) and value.ndim > 0:
                row[name] = value.astype(np.float64).ravel().tolist()
            else:
                row[name] = _scalar(value)
    except Exception as exc:  # noqa: BLE001 - recorded per task, the sweep goes on
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["traceback"] = traceback.format_exc()
    row["elapsed_s"] = time.perf_counter() - t0
    row["cpu_s"] = time.process_time() - c0  # CPU time of the worker process, all its threads
    row["finished_at"] = time.time()
    row["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    return row


def _scalar(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v
