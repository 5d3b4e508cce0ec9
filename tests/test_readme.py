"""The README runs as written, and the numbers it quotes are those of the files it names.

* Every Python block runs (in one namespace, in an empty scratch folder, since the blocks
  write ``results/``; the ``py`` blocks, which need torch, are left to ``.ci/wheel``).
* Every ``workbench ...`` line of the README's ``bash`` blocks runs and exits 0, through
  the console entry point's ``main`` in that scratch folder.  In the default run the two
  long commands run in a cheap form: ``workbench sweep`` with ``--dry-run`` (parses the
  experiment and counts its tasks) and ``workbench reproduce`` only parsed; the slow run
  (``-m slow``) executes them as written.
* Not run here: the set-up lines (a) and (b) (an install; (b) is this test suite, which
  ``.ci/run`` runs first, as written), the ``python benchmarks/...`` lines (minutes each)
  and the GPU/extra targets the README names in prose only (``torch-cuda-...``,
  ``--backend smt``, ``--scheduler``).
* From a wheel: ``.ci/wheel`` runs every Python block (``python`` and ``py``) and every
  shell block but those headed :data:`CLONE` in an empty folder, with the wheel (and
  torch) installed in a fresh environment; a shell block that names a file of the
  repository carries that heading.
* The Figure 7 numbers quoted ("0.84-1.38 on all 33 curves") agree with
  ``figures/fig7_summary.csv``, which ``workbench reproduce --full --only fig7_multiword``
  (quoted next to them) regenerates.
* The speed figures are what ``benchmarks/readme_speed.py`` makes of the committed
  results files of ``bench_engine.py`` and ``bench_sweep.py`` (``benchmarks/measured/``),
  and the thread threshold quoted is the engine's.
"""

import contextlib
import io
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from benchmarks import readme_speed
from workbench.cli import build_parser, main
from workbench.engine.operands import PARALLEL_MIN_WORK

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TEXT = README.read_text()
LONG = ("sweep", "reproduce")
#: the first line of a shell block that needs a clone of the repository (.ci/wheel skips it)
CLONE = "# in a clone of the repository"


def _cli_lines() -> list[str]:
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", TEXT, flags=re.S):
        for line in block.splitlines():
            if line.startswith("workbench "):
                lines.append(" ".join(shlex.split(line, comments=True)))
    return lines


CLI = _cli_lines()


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(line: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = main(shlex.split(line)[1:])
        except SystemExit as stop:      # --help
            code = stop.code or 0
    return code, out.getvalue()


def test_readme_python_blocks_run(scratch):
    blocks = re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)
    assert len(blocks) >= 6, "the README has a Python quick start"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - our own README
    # the results-folder example read a plain Parquet dataset with pandas
    assert len(namespace["df"]) == 9 and {"task_hash", "normwise_inf"} <= set(namespace["df"].columns)


def test_readme_lists_the_commands():
    commands = {line.split()[1] for line in CLI}
    assert {"--help", "--version", "formats", "presets", "explain", "sweep", "reproduce", "probe", "discriminate",
            "experiments"} <= commands


@pytest.mark.parametrize("line", [x for x in CLI if x.split()[1] not in LONG])
def test_readme_cli_line_runs(line, scratch):
    code, out = _run(line)
    assert code == 0, (line, out)
    assert out.strip(), line


@pytest.mark.parametrize("line", [x for x in CLI if x.split()[1] in LONG])
def test_readme_long_cli_line_parses_and_sweeps_count(line, scratch):
    args = build_parser().parse_args(shlex.split(line)[1:])
    assert args.command in LONG
    if args.command == "sweep":
        code, out = _run(line + " --dry-run")
        assert code == 0 and re.search(r"\d+ tasks on \d+ inputs, \d+ pending", out), out


@pytest.mark.slow
@pytest.mark.parametrize("line", [x for x in CLI if x.split()[1] in LONG])
def test_readme_long_cli_line_runs(line, scratch):
    code, out = _run(line)
    assert code == 0, (line, out)
    if line.split()[1] == "reproduce":
        assert (scratch / "figures" / "quick").is_dir() and not (scratch / "figures" / "cdna3_rounding_bias.png").exists()
    else:
        assert len(pd.read_parquet(scratch / "results" / "fig7_multiword")) > 0


def test_shell_blocks_that_name_the_repositorys_files_say_they_need_a_clone():
    blocks = re.findall(r"```(?:bash|sh)\n(.*?)```", TEXT, flags=re.S)
    clone = [b for b in blocks if b.startswith(CLONE + "\n")]
    assert len(clone) == 3          # set-up, documentation, benchmarks
    assert CLONE in (ROOT / ".ci" / "wheel").read_text()      # the heading .ci/wheel skips
    for block in blocks:
        if block not in clone:
            assert not re.search(r"pip install -e|benchmarks/|tests/|docs/|\.ci/|notebooks/", block), block


def test_ci_runs_readme_b_first_then_the_tests_the_extras_unlock():
    b = re.search(r"^# \(b\) .*\n(.*)$", TEXT, flags=re.M)[1]
    assert b.startswith("python3 -m venv .venv") and b.endswith("python -m pytest -q")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    runs = [i for i, line in enumerate(ci) if "pytest" in line and not line.startswith("#")]
    assert ci[runs[0]] == b                           # the first tests CI runs are README (b), verbatim
    between = [line.split("  #")[0] for line in ci[runs[0] + 1:runs[1]] if not line.startswith("#")]
    assert between == ["pip install torch==2.13.0", "pip install -e '.[dev,torch,oracle,smt]'"]   # torch first
    assert ci[runs[1]] == ('python -m pytest -q -m "(needs_torch or needs_oracle or needs_smt) and not slow and '
                           'not browser" || [ $? -eq 5 ]')


def test_quoted_figure7_numbers_match_the_summary_file():
    quote = re.search(r"per curve ([0-9.]+)-([0-9.]+) on\s+all (\d+) curves \(`figures/fig7_summary.md`\)", TEXT)
    assert quote, "the README quotes the Figure 7 summary"
    low, high, curves = float(quote[1]), float(quote[2]), int(quote[3])
    assert "workbench reproduce --full --only fig7_multiword" in TEXT   # the command that regenerates the file
    summary = pd.read_csv(ROOT / "figures" / "fig7_summary.csv")
    assert len(summary) == curves
    assert round(summary["geomean_ratio"].min(), 2) == low and round(summary["geomean_ratio"].max(), 2) == high
    # the committed file is the full run: the published curves have 20 points each
    assert (summary["points"] == 20).all()


def test_quoted_n2048_solver_numbers_match_the_committed_table():
    """The n = 2048 comparison with Carson & Higham and Haidar et al. quotes what
    ``figures/solvers_ir_n2048.csv`` (the full run of notebooks/solvers_ir) holds."""
    t = pd.read_csv(ROOT / "figures" / "solvers_ir_n2048.csv")
    assert "workbench reproduce --full --only solvers_ir" in TEXT
    assert len(t) == 390                         # the 420 solves but the 30 of the custom-unit panel
    lu = re.search(r"LU-IR\*\* converges up to kappa = (1e\d+) with an fp16 LU \((\d+) refinement steps on every unit\)"
                   r"\s+and (1e\d+) with a bf16 LU", TEXT)
    assert lu, "the README quotes LU-IR's reach at n = 2048"
    for fmt, reach in (("fp16", float(lu[1])), ("bf16", float(lu[3]))):
        part = t[(t["solver"] == "lu_ir") & (t["format"] == fmt)]
        assert (part.groupby("unit")["kappa"].apply(lambda k: k[part.loc[k.index, "status"] == "converged"].max())
                == reach).all(), fmt
        assert (part[part["kappa"] > reach]["status"] != "converged").all(), fmt
    assert (t[(t["solver"] == "lu_ir") & (t["format"] == "fp16") & (t["kappa"] == float(lu[1]))]["steps"]
            == int(lu[2])).all()
    gm = t[t["solver"] == "gmres_ir"]
    assert set(gm[gm["status"] == "converged"]["steps"]) == {2, 3}          # "in 2 or 3 refinement steps"
    reach = re.search(r"up to\s+kappa = (1e\d+) on every fp16 unit but MI250X", TEXT)
    assert reach
    fp16 = gm[(gm["format"] == "fp16") & (gm["kappa"] <= float(reach[1]))]
    ok = fp16.groupby("unit")["status"].apply(lambda s: (s == "converged").all())
    assert ok.drop("MI250X").all() and not ok["MI250X"]
    its = {(unit, kappa): n for unit, kappa, n in gm[gm["format"] == "fp16"][["unit", "kappa", "gmres its"]].itertuples(
        index=False)}
    q5 = re.search(r"at kappa = 1e5, (\d+) GMRES\s+iterations on H100 and (\d+) on MI250X", TEXT)
    q6 = re.search(r"at kappa = 1e6, (\d+) in idealised arithmetic and (\d+)\s+on MI250X", TEXT)
    assert q5 and q6
    assert (its[("H100", 1e5)], its[("MI250X", 1e5)]) == (int(q5[1]), int(q5[2]))
    assert (its[("ideal", 1e6)], its[("MI250X", 1e6)]) == (int(q6[1]), int(q6[2]))


def test_speed_figures_are_those_of_the_committed_benchmark_results():
    engine, sweep = readme_speed._records()
    assert readme_speed.readme_section(TEXT) == readme_speed.render(engine, sweep)
    kinds = {row["kind"] for row in engine["rows"]}   # every kind of unit, on the full set of shapes
    assert kinds == {"t-fdpa", "fma", "e-fdpa", "ftz-addmul", "tr-fdpa", "gtr-fdpa", "st-fdpa", "gst-fdpa"}
    assert not engine["quick"] and {row["k"] for row in engine["rows"]} >= {1024, 1_000_000}
    assert sweep["tasks"] == 660 and sweep["task_errors"] == 0


def test_quoted_thread_threshold_is_the_engines():
    quote = re.search(r"a product of 2\^(\d+) multiply-adds or more runs on numba's threads", TEXT)
    assert quote and 2 ** int(quote[1]) == PARALLEL_MIN_WORK
