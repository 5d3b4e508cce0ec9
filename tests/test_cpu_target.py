"""512-bit vectors for the compiled kernels (workbench._runtime.cpu_target): when ``import workbench``
sets numba's CPU features, when it leaves them to the user, and that the width changes no bit."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench._runtime import cpu_target

ROOT = Path(__file__).resolve().parents[1]
AVX512_HOST = "+64bit,+avx,+avx2,+avx512f,+avx512bw,+prefer-256-bit,-amx-tile"


def test_avx512_hosts_get_the_256_bit_preference_removed():
    features = cpu_target.wide_features(AVX512_HOST)
    assert features is not None
    parts = features.split(",")
    assert parts[-1] == "-prefer-256-bit" and "+prefer-256-bit" not in parts
    assert [p for p in parts if p != "-prefer-256-bit"] == [p for p in AVX512_HOST.split(",") if "prefer" not in p]


@pytest.mark.parametrize("host", ["+64bit,+avx,+avx2,+fma", "-avx512f,+avx2", "+neon,+fp-armv8", ""])
def test_hosts_without_avx512_are_left_alone(host):
    assert cpu_target.wide_features(host) is None


def _host_has_avx512() -> bool:
    from llvmlite import binding

    return cpu_target.wide_features(binding.get_host_cpu_features().flatten()) is not None


class _Host:
    def __init__(self, features: str) -> None:
        self.features = features

    def flatten(self) -> str:
        return self.features


@pytest.fixture
def fake_host(monkeypatch):
    from llvmlite import binding

    monkeypatch.setattr(binding, "get_host_cpu_features", lambda: _Host(AVX512_HOST))
    for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "WORKBENCH_VECTOR_WIDTH"):
        # set, then deleted: monkeypatch records the variable and restores its state (unset
        # included) after the test, so the fake AVX-512 features configure() writes never
        # reach the child processes of later tests (on a CPU without AVX-512 they died of
        # SIGILL: sweep workers, the CUDA simulator run)
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_configure_sets_numba_features_on_an_avx512_host(fake_host, monkeypatch):
    monkeypatch.setattr(cpu_target, "numba_codegen_built", lambda: False)
    assert cpu_target.configure() == cpu_target.wide_features(AVX512_HOST)
    assert os.environ["NUMBA_CPU_FEATURES"].endswith(",-prefer-256-bit")


def test_the_fake_hosts_features_do_not_outlive_their_test(pytestconfig):
    """The test above wrote fake AVX-512 features into this process's environment; its
    fixture must have taken them back (pytest runs a file's tests in order)."""
    assert "+avx512f" not in os.environ.get("NUMBA_CPU_FEATURES", "") or _host_has_avx512()


@pytest.mark.parametrize("name,value", [("NUMBA_CPU_FEATURES", "+avx2"), ("NUMBA_CPU_NAME", "generic"),
                                        ("WORKBENCH_VECTOR_WIDTH", "256")])
def test_the_users_choice_wins(fake_host, monkeypatch, name, value):
    monkeypatch.setattr(cpu_target, "numba_codegen_built", lambda: False)
    monkeypatch.setenv(name, value)
    assert cpu_target.configure() is None
    assert os.environ.get("NUMBA_CPU_FEATURES") == (value if name == "NUMBA_CPU_FEATURES" else None)


_CHILD = """
import json, sys
import numpy as np
import workbench as wb
out = {}
rng = np.random.default_rng(7)
for dev, fin in (("H100", "fp16"), ("V100", "fp16"), ("MI300X", "fp8_e4m3fnuz"), ("MI100", "fp16")):
    m = wb.preset(dev, fin, "fp32")
    A = wb.round(rng.standard_normal((24, 200)) * 2.0 ** rng.integers(-6, 6, (24, 200)), fin, saturate=True)
    B = wb.round(rng.standard_normal((200, 40)), fin, saturate=True)
    out[dev + "|" + fin] = [A.tolist(), B.tolist(), wb.gemm(A, B, model=m).view(np.int64).tolist()]
print(json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.skipif("-prefer-256-bit" not in os.environ.get("NUMBA_CPU_FEATURES", ""), reason="numba was not set to 512-bit vectors here (no AVX-512, or the user's setting)")
def test_the_vector_width_changes_no_bit():
    """The same products compiled for 256-bit vectors (a child process with
    WORKBENCH_VECTOR_WIDTH=256) and for 512-bit ones (this process): the same bits."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CPU_FEATURES"}
    env.update(WORKBENCH_VECTOR_WIDTH="256", PYTHONPATH=str(ROOT))
    child = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True,
                           timeout=900)
    products = json.loads(child.stdout)
    assert len(products) == 4
    for name, (A, B, bits) in products.items():
        here = wb.gemm(np.array(A), np.array(B), model=wb.preset(*name.split("|"), "fp32"))
        assert here.view(np.int64).tolist() == bits, name


def _child_without_settings(code: str) -> list[str]:
    """The words ``code`` prints in a child process with none of the CPU settings set."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_FEATURES", "NUMBA_CPU_NAME",
                                                           "WORKBENCH_VECTOR_WIDTH")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                          timeout=300).stdout.split()


def test_a_code_generator_built_before_workbench_is_left_alone():
    """numba builds its code generator at the first @njit decoration; after that no
    setting reaches it, so importing workbench sets nothing (a child process)."""
    code = ("import os, numba\n@numba.njit\ndef f(x):\n    return x\n"
            "from workbench import cpu_target\n"
            "print(cpu_target.numba_codegen_built(), os.environ.get('NUMBA_CPU_FEATURES'))")
    assert _child_without_settings(code) == ["True", "None"]


@pytest.mark.skipif(not _host_has_avx512(), reason="no AVX-512 on this CPU: workbench leaves numba's features alone")
def test_numba_imported_before_workbench_still_gets_the_features():
    """numba reads its settings when it is imported; one imported before workbench (a
    user's script, the tests' compile log) but with no kernel decorated yet must still build
    its code generator with the features configure() set.  Otherwise its kernels are
    compiled for other features than every other process's and are compiled again under
    another cache key (a cold test run compiled 36 of the warm-up's 37 kernels twice)."""
    code = ("import os\nfrom numba.core import event\nimport workbench\n"
            "from numba.core.registry import cpu_target\n"
            "print(cpu_target.target_context.codegen()._get_host_cpu_features() == os.environ['NUMBA_CPU_FEATURES'])")
    assert _child_without_settings(code) == ["True"]


def test_configure_leaves_a_built_code_generator_alone(fake_host):
    import numba  # noqa: F401  (this process decorated its kernels long ago)

    assert cpu_target.numba_codegen_built()
    assert cpu_target.configure() is None
    assert "NUMBA_CPU_FEATURES" not in os.environ
