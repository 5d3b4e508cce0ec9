"""The command line's defects of issue 55, item 5: a closed pipe ends a command quietly,
every table fits the terminal's width without losing text, the compile bar's count and
total count the same things (and it shows no time left it cannot know), and a torch
Policy's repr is one short line."""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import numba
import pytest
import tqdm

from workbench.units import catalogue
from workbench.numbers import formats
from workbench.cli import main
from workbench.cli.table import _fmt_number, render_table
from workbench.sweep.resources import experiment_files
from workbench.sweep import spec, store, warmup

# ---------------------------------------------------------------- a closed pipe


def _pipe(min_size: bool) -> tuple[int, int]:
    """A pipe (read end, write end), as small as the system allows when ``min_size``
    (Linux: one page), so that a writer fills it long before its output ends."""
    r, w = os.pipe()
    if min_size:
        import fcntl

        if hasattr(fcntl, "F_SETPIPE_SZ"):
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 4096)
    return r, w


def _workbench_into(w: int, *argv: str, unbuffered: bool = False) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    return subprocess.Popen([sys.executable, "-m", "workbench", *argv], stdout=w, stderr=subprocess.PIPE, env=env)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
def test_a_reader_that_stops_after_one_line_ends_the_command_quietly():
    # `workbench presets | head -1`; the JSON table (some 70 kB) is far longer than the pipe
    r, w = _pipe(min_size=True)
    writer = _workbench_into(w, "presets", "--format", "json")
    reader = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()"], stdin=r)
    os.close(r)
    os.close(w)
    assert reader.wait(timeout=120) == 0
    _, err = writer.communicate(timeout=120)
    assert (writer.returncode, err.decode()) == (0, "")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
@pytest.mark.parametrize("unbuffered", [False, True], ids=["at-the-last-flush", "while-printing"])
def test_a_reader_gone_before_the_output_is_written_ends_the_command_quietly(unbuffered):
    # buffered, a short table stays in stdout's buffer until the end: the write fails at the
    # last flush (before the fix: "Exception ignored ... BrokenPipeError", status 120);
    # unbuffered (PYTHONUNBUFFERED), the command's first print fails
    r, w = _pipe(min_size=False)
    os.close(r)
    writer = _workbench_into(w, "formats", unbuffered=unbuffered)
    os.close(w)
    _, err = writer.communicate(timeout=120)
    assert (writer.returncode, err.decode()) == (0, "")


# ---------------------------------------------------------------- tables fit the width

COMMANDS = [("formats",), ("formats", "--all-columns"), ("experiments",), ("presets",), ("presets", "--evidence")]


def _run(capsys, monkeypatch, width: int, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _words(text: str) -> str:
    return " ".join(text.split())


def _rows(text: str) -> dict[str, str]:
    """First word of a line -> the words of its lines and of the indented lines after it,
    over every part of a table (a part repeats the key column)."""
    rows: dict[str, list[str]] = {}
    key = None
    for line in text.splitlines():
        if line[:1].strip():
            key = line.split()[0]
            rows.setdefault(key, [])
        if key is not None:
            rows[key].append(line)
    return {k: _words("\n".join(v)) for k, v in rows.items()}


@pytest.mark.parametrize("width", [100, 80])
@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_every_table_fits_the_terminal(capsys, monkeypatch, argv, width):
    out = _run(capsys, monkeypatch, width, *argv)
    assert max(len(line) for line in out.splitlines()) <= width


@pytest.mark.parametrize("width", [100, 80, 60])
def test_formats_keeps_every_cell(capsys, monkeypatch, width):
    rows = _rows(_run(capsys, monkeypatch, width, "formats", "--all-columns"))
    for f in formats.format_table():
        row = rows[f["name"]]
        # every number whole, in its column's order; the description's words in order
        cells = [_fmt_number(f[c]) for c in ("bits", "p", "emin", "emax", "largest", "smallest_normal",
                                             "smallest_subnormal", "unit_roundoff", "inf_nan", "encoding")]
        tokens = iter(row.split())
        assert all(c in tokens for c in cells), f["name"]
        assert _words(f["description"]) in row


@pytest.mark.parametrize("width", [100, 80])
def test_experiments_keeps_whole_descriptions(capsys, monkeypatch, width):
    out = _run(capsys, monkeypatch, width, "experiments")
    assert any(line.startswith(" ") for line in out.splitlines())      # a description wrapped
    rows = _rows(out)
    for name, path in experiment_files().items():
        assert rows[name].endswith(_words(str(spec.read(path).get("description", "")))), name


def test_presets_keeps_the_legend_and_the_evidence(capsys, monkeypatch):
    assert _words(catalogue.PRESET_LEGEND) in _words(_run(capsys, monkeypatch, 80, "presets"))
    out = _words(_run(capsys, monkeypatch, 80, "presets", "--evidence"))
    for rec in catalogue.records():
        assert _words(" ".join([rec.name, *(e.summary() for e in rec.evidence)])) in out, rec.name


def test_render_table_wraps_long_cells_and_splits_what_cannot_fit():
    words = "the quick brown fox jumps over the lazy dog " * 3
    rows = [{"key": "a", "number": 1.0 / 3.0, "text": words}, {"key": "b", "number": 2.0**-40, "text": "short"}]
    text = render_table(rows, ["key", "number", "text"], width=30)
    assert max(map(len, text.splitlines())) <= 30
    assert len(text.splitlines()) > 4                     # the long cell took several lines
    assert _rows(text)["a"] == _words(f"a 0.333333 {words}")
    assert _rows(text)["b"] == "b 2^-40 short"
    # columns that cannot fit beside each other even with whole words: parts, each with the key
    long = {f"column_{i}": f"value{i}_" + "x" * 12 for i in range(5)}
    text = render_table([{"key": "row", **long}], ["key", *long], width=40)
    assert max(map(len, text.splitlines())) <= 40
    assert text.count("\n\n") >= 1 and text.count("\nrow ") == text.count("\n\n") + 1
    for value in long.values():
        assert value in text.split()                      # no value cut


# ---------------------------------------------------------------- the compile bar


class _Bar(tqdm.tqdm):
    """The bar compile_experiments makes, writing every frame to ``FRAMES``."""

    FRAMES = io.StringIO()

    def __init__(self, *args, **kwargs):
        kwargs.update(file=self.FRAMES, delay=0, mininterval=0, dynamic_ncols=False, ncols=200, disable=False)
        super().__init__(*args, **kwargs)


def _compile_two(exp, task, references):
    """A stand-in for a warm-up task: compiles a kernel and, nested, the function it calls."""
    def plus_one(x):
        return x + 1

    inner = numba.njit(plus_one)

    def kernel(x):
        return inner(x) * 2

    numba.njit(kernel)(task.index)
    return {}


def test_the_compile_bar_counts_tasks_against_tasks_and_shows_no_eta_while_compiling(monkeypatch):
    monkeypatch.setattr("tqdm.auto.tqdm", _Bar)
    monkeypatch.setattr(warmup, "run_here", _compile_two)
    _Bar.FRAMES = io.StringIO()
    exp = {"name": "two_groups", "reference": "exact", "metrics": ["exact_match"],
           "defaults": {"algorithm": "gemm", "out_format": "fp32", "m": 1, "k": 8, "n": 1, "seed": 0,
                        "input": {"generator": "normal"}},
           "grid": [{"in_format": "fp16", "preset": ["V100", "A100", "H100"]}]}
    seconds, compiled = warmup.compile_experiments([exp], parallel=False)
    assert compiled == 6                                  # what numba compiled: 3 kernels, each with its callee
    frames = [f for f in _Bar.FRAMES.getvalue().split("\r") if warmup.COMPILING in f]
    assert frames
    for frame in frames:
        done, total = map(int, re.search(r"(\d+)/(\d+)", frame).groups())
        assert total == 3 and done <= total, frame     # the warm-up tasks, one per kernel group
        assert "<" not in frame and "/s" not in frame, frame     # no time left, no rate
        assert not re.search(r"\d+ compiled", frame), frame
    assert "now kernel" in _Bar.FRAMES.getvalue() and "now plus_one" in _Bar.FRAMES.getvalue()


def test_the_compile_bar_gives_the_time_left_back_when_compiling_is_over():
    out = io.StringIO()
    bar = tqdm.tqdm(total=10, file=out, mininterval=0, ncols=200, desc="exp")
    show = warmup.CompilingBar(bar, "exp: ")
    show("kernel")
    bar.update(1)
    assert "<" not in out.getvalue().split("\r")[-1]
    show.done("exp")
    bar.update(1)
    frame = out.getvalue().split("\r")[-1]
    bar.close()
    assert frame.startswith("exp:") and "<" in frame and "/s" in frame and warmup.COMPILING not in frame


def test_reproduce_shows_no_time_left_while_a_sweep_compiles(tmp_path, capsys):
    from workbench.studies.reproduce import _SweepProgress

    (tmp_path / "sweep").mkdir()
    watch = _SweepProgress(tmp_path, "[1/1] nb")
    store.save_progress(tmp_path / "sweep", "sweep", "compiling", 1, 40)
    watch._poll()                                         # what its thread does every half second
    compiling = capsys.readouterr().err.split("\r")[-1]
    store.save_progress(tmp_path / "sweep", "sweep", "done", 40, 40)
    watch._poll()
    assert warmup.COMPILING in compiling and "1/40" in compiling and "<" not in compiling


# ---------------------------------------------------------------- torch.Policy


def test_policy_repr_is_short_and_names_the_units():
    pytest.importorskip("torch", reason="workbench.torch needs PyTorch (pip install torch==2.13.0 && "
                                        "pip install -e '.[torch]')")
    import workbench
    import workbench.torch as wt

    e4m3, e5m2 = workbench.preset("H100", "fp8_e4m3"), workbench.preset("H100", "fp8_e5m2")
    policy = wt.Policy(forward=e4m3, dgrad=e5m2, scaling="tensor", quantize="rne")
    assert repr(policy) == (f"Policy(forward={e4m3.name!r}, dgrad={e5m2.name!r}, scaling='tensor', "
                            "quantize='rne')")
    assert repr(wt.Policy("H100:fp16:fp32", dgrad="H100:fp16:fp32", schedule="cublas-h100-fp16-fp32")) == (
        "Policy(forward='hopper/wgmma/fp16->fp32', schedule='cublas-h100-fp16-fp32')")
    recipe = wt.Policy.for_recipe(wt.nvfp4(), keep_last=1)
    assert repr(recipe) == (f"Policy(forward={recipe.forward.name!r}, recipe='nvfp4', high={recipe.high.name!r}, "
                            "keep_last=1)")
    mixed = wt.Policy.for_recipe({"forward": wt.mxfp8(), "dgrad": None, "wgrad": None})
    assert "recipe={'forward': 'mxfp8_e4m3', 'dgrad': None, 'wgrad': None}" in repr(mixed)
    custom = wt.Policy(workbench.custom_model("bf16", "fp32", L=8, F=22, rounding="rne"))
    assert repr(custom).startswith("Policy(forward=Model(kind=t-fdpa, in_format=bf16, out_format=fp32, L=8, F=22")
    assert max(len(repr(p)) for p in (policy, recipe, mixed, custom)) < 300
