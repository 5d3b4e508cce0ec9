"""The markers of the optional extras (``tests/conftest.py``): a test that needs an extra
carries its marker, so that ``.ci/run`` selects it once the extras are installed, after
README (b) has run the default suite without them."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parents[1]

SAMPLE = '''
import pytest

pytest.importorskip("mmasim", reason="module level")


def helper():
    return pytest.importorskip("torch.nn")


def test_through_a_helper():
    helper()


def test_by_keyword():
    pytest.importorskip(modname="z3")


def test_other_modules():
    pytest.importorskip("numpy")
    pytest.importorskip("torchvision")


class TestGroup:
    def test_method(self):
        pytest.importorskip("sklearn.datasets")
'''


def test_the_source_tells_which_extra_a_test_needs(tmp_path):
    path = tmp_path / "test_sample.py"
    path.write_text(SAMPLE)
    top, _ = conftest._source_index(str(path))
    assert top == {"needs_oracle"}
    need = {name: conftest._function_extras(str(path), name) for name in
            ("test_through_a_helper", "test_by_keyword", "test_other_modules", "TestGroup.test_method")}
    assert need == {"test_through_a_helper": {"needs_torch"}, "test_by_keyword": {"needs_smt"},
                    "test_other_modules": set(), "TestGroup.test_method": {"needs_torch"}}


def test_the_markers_are_registered():
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert {m.split(":")[0] for m in markers if m.startswith("needs_")} == set(conftest.EXTRAS)


def test_ci_selects_the_tests_that_need_an_extra():
    """Collected without the extras' modules being needed: a fixture's importorskip
    (test_blockscale's ``tao``), a test's own (test_schedules) and explicit markers beside a
    ``skipif`` (test_discriminate), and nothing else of those files."""
    files = ["tests/test_blockscale.py", "tests/test_schedules.py", "tests/test_discriminate.py"]
    out = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "-n", "0", "-p", "no:cacheprovider",
                          "-m", "needs_torch or needs_oracle or needs_smt", *files],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    ids = {line for line in out.splitlines() if "::" in line}
    assert ids == {
        *(f"tests/test_blockscale.py::test_{name}" for name in (
            "mx_equals_torchao", "nvfp4_equals_torchao",
            "nvfp4_16x16_weight_blocks_equal_torchao_rows_holding_the_block_amax", "torchao_floor_inf_amax_pinned",
            "torchao_smallest_scale_divides_by_2_pow_minus_126_pinned", "torchao_rceil_fp32_log2_pinned",
            "torchao_nan_block_pinned", "torchao_nvfp4_zero_and_inf_tensors_pinned")),
        "tests/test_schedules.py::test_schedules_travel_as_data_to_sweeps_and_torch_policies",
        *(f"tests/test_discriminate.py::test_{name}" for name in (
            "carry_bits_smt", "smt_finds_rechecked_input", "smt_proves_equivalence_and_rejects_unsupported")),
    }
