"""Library models saved and re-checked (issue 54, items 3 and 4): :func:`save_library_model`,
:func:`verify_saved`, the ``[library]`` table of unit files and ``workbench probe LIBRARY
--save FILE`` / ``--verify FILE``.

Oracles: a test-only library whose GEMM *is* :func:`workbench.gemm` with a known schedule
(its own model verifies; a file whose schedule was changed must not, on exactly the
products where the two schedules differ), and threadpoolctl read directly for the
environment of the real numpy.  Nothing here expects the real numpy to verify: the
hand-written candidates describe OpenBLAS' Haswell kernels, and this suite runs on any
x86-64 core.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
from pathlib import Path

import numpy as np
import pytest
import threadpoolctl

import workbench as wb
from workbench.units import schedules as S
from workbench.cli import main
from workbench.probes import library
from workbench.probes.library import (LIBRARIES, Library, LibraryCandidate, LibraryEnvironment, numpy_environment,
                                      probe_library, save_library_model, verify_saved)
from workbench.units.unitfile import UnitFileError, read_unit, save_unit

#: the fake library's schedule: FMA chains over OpenBLAS-style K blocks of 16 (K <= 16: one chain)
KNOWN = S.Schedule(name="fake-blocks-16", c_position="combine", combine_format="fp64",
                   rules=(S.KRule(1, None, S.Split(block=16, block_unroll=4)),))
#: K blocks of 32: the same sums as KNOWN for K <= 16, other sums for K = 40
OTHER = S.Schedule(name="fake-blocks-32", c_position="combine", combine_format="fp64",
                   rules=(S.KRule(1, None, S.Split(block=32, block_unroll=4)),))
TINY = ((3, 5, 12), (4, 6, 40))
FPREV = (4, 8, 32)
ENV = LibraryEnvironment("fakeblas", "1.2", "TestCore", 1, 4, "a test double")


def _fma64() -> wb.Model:
    return wb.custom_model("fp64", "fp64", kind="fma")


def _fake(candidate_schedule: S.Schedule, kernels: tuple[str, ...] = ("TestCore",)) -> Library:
    """A library whose A @ B is workbench.gemm with KNOWN; its candidate is the given schedule."""
    return Library("fp64", "float64", lambda A, B: wb.gemm(A, B, model=_fma64(), schedule=KNOWN),
                   lambda n: contextlib.nullcontext(), lambda: ENV,
                   (LibraryCandidate(_fma64, candidate_schedule, "written for the test", kernels=kernels),))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> str:
    """Register ``fake-fp64`` (candidate = KNOWN) and ``fake-wrong`` (candidate = OTHER,
    written for another kernel); the CLI's probes run on TINY."""
    monkeypatch.setitem(LIBRARIES, "fake-fp64", _fake(KNOWN))
    monkeypatch.setitem(LIBRARIES, "fake-wrong", _fake(OTHER, kernels=("OtherCore",)))
    monkeypatch.setattr(library, "probe_library", functools.partial(probe_library, shapes=TINY, fprev_shape=FPREV))
    monkeypatch.setattr(library, "verify_saved", functools.partial(verify_saved, shapes=TINY))
    return "fake-fp64"


def _outputs(shapes: tuple[tuple[int, int, int], ...]) -> int:
    return 2 * sum(M * N for M, N, _ in shapes)          # a random and an adversarial product per shape


def test_a_verified_library_model_saves_and_reads_back(fake, tmp_path):
    report = probe_library(fake, shapes=TINY, fprev_shape=FPREV)
    assert report.verified and report.environment == ENV
    uf = read_unit(save_library_model(report, tmp_path / "m.toml"))
    assert uf.schedule == KNOWN and uf.model == _fma64()
    assert uf.library == {"target": "fake-fp64", "verdict": "verified", "library": "fakeblas", "version": "1.2",
                          "kernel": "TestCore", "threads": 1, "default_threads": 4, "details": "a test double"}
    assert LibraryEnvironment.from_dict(uf.library) == ENV
    n = _outputs(TINY)
    assert uf.provenance.origin == "probed"
    assert uf.provenance.verification == {"outputs_checked": n, "outputs_agreed": n, "products_checked": 4}
    assert "TestCore" in uf.provenance.target and "1 thread in the verification (default 4)" in uf.provenance.target


def test_cli_saves_and_verifies_a_library_model(fake, tmp_path, capsys):
    path = tmp_path / "fake.toml"
    assert main(["probe", fake, "--save", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"saved {path}" in out and "kernel                   TestCore" in out
    assert "threads                  1 for the verification (default 4)" in out
    assert read_unit(path).library["verdict"] == "verified"
    assert main(["probe", fake, "--verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"verification: verified: bit-identical on all {_outputs(TINY)} outputs of 4 products" in out
    assert "warning" not in out


def test_a_tampered_schedule_is_not_verified_where_the_schedules_differ(fake, tmp_path, capsys):
    """The saved blocks of 16 changed to 32: K = 12 is one chain under both (no output
    differs), K = 40 is summed otherwise (outputs differ) - and the answer says so with counts."""
    path = save_library_model(probe_library(fake, shapes=TINY, fprev_shape=FPREV), tmp_path / "m.toml")
    text = path.read_text()
    assert text.count("block = 16") == 1
    path.write_text(text.replace("block = 16", "block = 32"))
    check = verify_saved(fake, path, shapes=TINY)
    assert not check.verified
    by_shape = {(shape, kind): bad for shape, kind, bad, _, _ in check.results}
    assert by_shape[((3, 5, 12), "random")] == 0 and by_shape[((3, 5, 12), "adversarial")] == 0
    bad = by_shape[((4, 6, 40), "random")] + by_shape[((4, 6, 40), "adversarial")]
    assert bad > 0
    assert main(["probe", fake, "--verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"NOT verified: {bad} of {_outputs(TINY)} outputs differ from the saved model" in out


def test_verify_warns_where_the_saved_environment_differs(fake, tmp_path, capsys):
    path = save_library_model(probe_library(fake, shapes=TINY, fprev_shape=FPREV), tmp_path / "m.toml")
    path.write_text(path.read_text().replace('kernel = "TestCore"', 'kernel = "Haswell"')
                    .replace("default_threads = 4", "default_threads = 64"))
    assert main(["probe", fake, "--verify", str(path)]) == 0         # still the same arithmetic
    out = capsys.readouterr().out
    assert "warning: the environment differs from the saved one: kernel: saved Haswell, here TestCore" in out
    assert "warning: the environment differs from the saved one: default_threads: saved 64, here 4" in out
    assert "version" not in "".join(line for line in out.splitlines() if "warning" in line)


def test_an_unverified_model_saves_marked_so_and_names_the_kernel(fake, tmp_path, capsys):
    """A candidate written for another kernel: the sheet says which kernel ran, which the
    candidate describes and what to do; --save still writes the file, marked not verified
    with its counts, and says so; the exit status is 1."""
    path = tmp_path / "wrong.toml"
    assert main(["probe", "fake-wrong", "--save", str(path)]) == 1
    out = capsys.readouterr().out
    assert "verification: NOT verified:" in out
    assert ("kernel: this machine ran the TestCore kernel of fakeblas 1.2; the candidate (fake-blocks-32) "
            "describes the OtherCore kernels, not this one") in out
    assert "to do: recover this kernel's schedule: workbench probe fake-wrong --recover" in out
    uf = read_unit(path)
    assert uf.library["verdict"] == "not verified" and uf.schedule == OTHER
    v = uf.provenance.verification
    bad = v["outputs_checked"] - v["outputs_agreed"]
    assert v["outputs_checked"] == _outputs(TINY) and bad > 0
    assert f"saved {path}, marked not verified ({bad} of {_outputs(TINY)} outputs differ)" in out
    assert "NOT verified" in uf.provenance.notes


def test_the_kernel_advice_needs_another_kernel(fake, monkeypatch):
    """Not verified on the kernel the candidate was written for: no kernel advice."""
    monkeypatch.setitem(LIBRARIES, "fake-wrong", _fake(OTHER, kernels=("TestCore",)))
    report = probe_library("fake-wrong", shapes=TINY, fprev_shape=FPREV)
    assert not report.verified and not report.other_kernel
    assert "--recover" not in report.sheet() and "NOT verified" in report.sheet()


def test_numpy_model_records_the_blas_numpy_calls(tmp_path):
    """A real numpy-fp64 model (verified or not, whatever the core): its [library] table is
    what threadpoolctl says of numpy's own BLAS now, and re-checking it on the same products
    gives the counts it was saved with."""
    shapes = ((3, 5, 20), (4, 2, 9))
    report = probe_library("numpy-fp64", shapes=shapes, fprev_shape=FPREV)
    uf = read_unit(save_library_model(report, tmp_path / "np.toml"))
    blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    root = Path(np.__file__).resolve().parent
    own = [i for i in blas if Path(i["filepath"]).resolve().is_relative_to(root)
           or Path(i["filepath"]).resolve().is_relative_to(root.parent / "numpy.libs")] or blas
    assert len(own) == 1
    lib = uf.library
    assert (lib["library"], lib["version"], lib["kernel"], lib["default_threads"], lib["threads"]) == (
        own[0]["internal_api"], own[0]["version"], own[0].get("architecture") or "unknown", own[0]["num_threads"], 1)
    assert lib["target"] == "numpy-fp64" and lib["verdict"] == ("verified" if report.verified else "not verified")
    assert own[0]["filepath"] in str(lib["details"])
    check = verify_saved("numpy-fp64", uf.path, shapes=shapes)
    assert check.differences == []
    assert [r[:4] for r in check.results] == [r[:4] for r in report.results]
    v = uf.provenance.verification
    assert v["outputs_checked"] - v["outputs_agreed"] == sum(r[2] for r in check.results)


def _blas(path: str, version: str, arch: str, threads: int) -> dict:
    return {"user_api": "blas", "internal_api": "openblas", "filepath": path, "version": version,
            "architecture": arch, "num_threads": threads}


def test_numpy_environment_picks_numpys_blas_among_several(monkeypatch):
    """scipy's OpenBLAS loaded first, with another version and core: the environment is
    numpy's (the file under numpy.libs); none under numpy's folders and two loaded: not known."""
    numpy_libs = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    scipy = _blas("/x/scipy.libs/libscipy_openblas.so", "0.3.30", "Haswell", 8)
    numpy = _blas(str(numpy_libs / "libscipy_openblas64_.so"), "0.3.31", "SkylakeX", 3)
    monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda: [scipy, numpy])
    env = numpy_environment()
    assert (env.library, env.version, env.kernel, env.threads, env.default_threads) == (
        "openblas", "0.3.31", "SkylakeX", 1, 3)
    monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda: [scipy])
    assert numpy_environment().kernel == "Haswell"          # the only BLAS loaded: numpy links it
    monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda: [scipy, _blas("/y/libblas.so", "1", "Zen", 2)])
    env = numpy_environment()
    assert (env.library, env.kernel, env.default_threads) == ("unknown", "unknown", 0)
    assert "/x/scipy.libs/libscipy_openblas.so" in env.details and "/y/libblas.so" in env.details
    assert "(default not known)" in env.describe()


def test_torch_fp32_kernel_is_the_mkl_dispatch_that_ran():
    """The float32 kernel is the code MKL itself reports in another process run with
    MKL_VERBOSE=1 ("... for Intel(R) 64 architecture <dispatch>, Lnx ..."), or ATen's GEMM
    with the CPU capability where torch has no MKL."""
    import re
    import subprocess
    import sys

    torch = pytest.importorskip("torch")
    env = library.torch_environment()
    assert (env.library, env.version, env.threads, env.default_threads) == (
        "torch", torch.__version__, 1, torch.get_num_threads())
    assert ("MKL " in env.details) == torch.backends.mkl.is_available()
    code = "import torch; x = torch.ones((16, 16)); x @ x"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "MKL_VERBOSE": "1"}).stdout
    found = re.search(r"MKL_VERBOSE .* architecture (.+?), Lnx", out)
    if torch.backends.mkl.is_available():
        assert found and env.kernel.startswith(f"MKL sgemm ({found.group(1)})"), (out[:300], env.kernel)
    else:
        assert env.kernel.startswith(f"ATen gemm ({torch.backends.cpu.get_cpu_capability()})")


def test_torch_bf16_kernel_is_the_onednn_implementation_that_ran():
    """The bf16 kernel is what oneDNN itself reports in another process run with
    ONEDNN_VERBOSE=1 for a 17 x 17 x 17 product (above torch's 16^3 threshold), or ATen's
    loop with the CPU capability where oneDNN prints no matmul call (no AVX-512)."""
    import re
    import subprocess
    import sys

    torch = pytest.importorskip("torch")
    code = "import torch; x = torch.ones((17, 17), dtype=torch.bfloat16); x @ x"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "ONEDNN_VERBOSE": "1"}).stdout
    found = re.search(r"primitive,exec,cpu,matmul,([^,]+),", out)
    kernel = library.torch_environment("bfloat16").kernel
    if found:
        assert kernel == f"oneDNN {found.group(1)}"
    else:
        assert kernel == f"ATen gemm ({torch.backends.cpu.get_cpu_capability()})"


@pytest.mark.parametrize(("argv", "reason"), [
    (["probe", "numpy-fp32", "--fasi"], "--fasi does not apply to the library target numpy-fp32"),
    (["probe", "numpy-fp64", "--verify", "200"], "--verify 200 does not apply to the library target numpy-fp64"),
    (["probe", "numpy-fp64", "--verify", "m.toml", "--save", "n.toml"], "--verify m.toml and --save n.toml together"),
    (["probe", "preset:A100:fp16:fp32", "--verify", "m.toml"], "a unit target takes --verify N"),
    (["probe", "numpy-fp64", "--verify", "no-such-file.toml"], "does not exist"),
])
def test_options_a_target_cannot_use_are_refused(argv, reason, capsys):
    """Refused before anything runs: exit status 2 and one line naming the option."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert reason in captured.err and captured.err.strip().count("\n") == 0 and captured.out == ""


def test_verify_refuses_a_file_of_another_target_or_without_a_schedule(fake, tmp_path):
    path = save_library_model(probe_library(fake, shapes=TINY, fprev_shape=FPREV), tmp_path / "m.toml")
    with pytest.raises(ValueError, match="models the library target 'fake-fp64', not 'numpy-fp64'"):
        verify_saved("numpy-fp64", path)
    bare = save_unit(_fma64(), tmp_path / "bare.toml")
    with pytest.raises(ValueError, match=r"has no \[schedule\]"):
        verify_saved(fake, bare)


_TABLE = {"target": "numpy-fp32", "verdict": "not verified", "library": "openblas", "version": "0.3.31",
          "kernel": "SkylakeX", "threads": 1, "default_threads": 2, "details": ""}


@pytest.mark.parametrize(("change", "message"), [
    ({"threads": "1"}, "library.threads: expected an integer"),
    ({"threads": 0}, "library.threads: 0 is out of range"),
    ({"default_threads": True}, "library.default_threads: expected an integer"),
    ({"kernel": 7}, "library.kernel: expected a string"),
    ({"verdict": "maybe"}, "library.verdict: 'maybe': expected one of verified, not verified"),
    ({"target": ""}, "library.target: empty"),
    ({"code": "__import__('os')"}, "library.code: unknown key"),
])
def test_the_library_table_is_checked_as_data(change, message, tmp_path):
    """Every key typed, none unknown, none missing - on reading and before writing."""
    with pytest.raises(UnitFileError, match=message):
        save_unit(_fma64(), tmp_path / "w.toml", schedule=KNOWN, library={**_TABLE, **change})
    assert not (tmp_path / "w.toml").exists()
    text = save_unit(_fma64(), tmp_path / "r.toml", schedule=KNOWN, library=_TABLE).read_text()
    table = "".join(f"{k} = {json.dumps(v)}\n" for k, v in {**_TABLE, **change}.items())
    (tmp_path / "r.toml").write_text(text[:text.index("[library]")] + "[library]\n" + table)
    with pytest.raises(UnitFileError, match=message):
        read_unit(tmp_path / "r.toml")


def test_the_library_table_needs_every_key_and_a_schedule(tmp_path):
    path = save_unit(_fma64(), tmp_path / "m.toml", schedule=KNOWN, library=_TABLE)
    assert read_unit(path).library == _TABLE
    text = path.read_text()
    path.write_text(text.replace('kernel = "SkylakeX"\n', ""))
    with pytest.raises(UnitFileError, match="library: missing kernel"):
        read_unit(path)
    path.write_text(text[:text.index("[schedule]")] + text[text.index("[library]"):])
    with pytest.raises(UnitFileError, match=r"\[library\] table goes with a \[schedule\]"):
        read_unit(path)
    with pytest.raises(ValueError, match="library= without schedule="):
        save_unit(_fma64(), tmp_path / "n.toml", library=_TABLE)
