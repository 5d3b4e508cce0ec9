"""Build step that pyproject.toml cannot express: the wheel carries the repository's top-level
``notebooks/``, ``experiments/`` and ``paper_data/`` under ``workbench/_data/``.

Everything else (metadata, dependencies, packages) is in pyproject.toml.  The folders stay
at the top of the checkout, each file once in git; ``build_py`` copies them into the build
tree, so a wheel (built from the checkout or from the sdist, which MANIFEST.in makes carry
them) holds them and :func:`workbench.sweep.resources.data_dir` finds them there.  An editable
install copies nothing: the package then reads the checkout's folders.
"""
from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent

#: folder -> the files of it the wheel carries (glob patterns; the keys are
#: workbench.sweep.resources.BUNDLED, which tests/test_package.py checks)
BUNDLE: dict[str, tuple[str, ...]] = {
    "notebooks": ("*.ipynb",),
    "experiments": ("*.toml", "README.md"),
    "paper_data": ("**/*",),
}


def bundled_files() -> list[Path]:
    """The files of :data:`BUNDLE`, relative to the repository root, sorted."""
    files = {p.relative_to(ROOT) for folder, patterns in BUNDLE.items() for pattern in patterns
             for p in (ROOT / folder).glob(pattern) if p.is_file()}
    return sorted(files)


class BuildPyWithData(build_py):
    """``build_py`` that also copies :func:`bundled_files` to ``workbench/_data/``."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        for rel in bundled_files():
            dst = Path(self.build_lib) / "workbench" / "_data" / rel
            self.mkpath(str(dst.parent))
            self.copy_file(str(ROOT / rel), str(dst))


if __name__ == "__main__":
    setup(cmdclass={"build_py": BuildPyWithData})
