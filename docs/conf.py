"""Sphinx configuration of the documentation site (``sphinx-build -W --keep-going -n docs docs/_build/html``).

Why Sphinx + MyST rather than MkDocs: the docstrings are numpy style (napoleon reads them),
``-n`` (nitpicky) turns every cross-reference that does not resolve into an error, and the
unit catalogue and the figure gallery are generated from the package by a small local
extension (``_ext/generate.py``) at build time, with no plugin beyond Sphinx itself.  The
pages stay Markdown (myst-parser), like the README and docs/architecture.md.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))   # the checkout's workbench and algorithms, not an installed copy

import workbench  # noqa: E402

project = "Mixed-precision workbench"
author = "The mixed-precision workbench authors"
copyright = "2026, " + author
release = version = workbench.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon", "generate"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}   # autosummary writes .rst stubs
exclude_patterns = ["_build"]
html_theme = "furo"
html_title = f"{project} {version}"
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
suppress_warnings = ["myst.header"]   # pages written for GitHub start at a level-2 heading here and there

autosummary_generate = True
templates_path = ["_templates"]   # a class page: its docstring, not a table of undocumented members
autodoc_default_options = {"members": False}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
# the docs extra has no PyTorch: where it is missing, autodoc imports workbench.torch against a
# mock of it, so the workbench.torch pages still show the API (signatures and docstrings are
# workbench's own); with PyTorch installed, the real one is used
autodoc_mock_imports = [] if importlib.util.find_spec("torch") else ["torch"]
napoleon_numpy_docstring = True
napoleon_google_docstring = False
# nitpicky (-n): every cross-reference must resolve, except to the libraries the signatures
# name (no intersphinx: the build reads nothing from the network)
nitpick_ignore_regex = [
    (r"py:.*", r"(np|numpy|pd|pandas|torch|scipy|mpmath|numba|dask|distributed|z3|matplotlib|pyarrow)(\..*)?"),
    (r"py:.*", r"(collections\.abc|typing|pathlib|os|fractions|argparse|concurrent\.futures)\..*"),
    (r"py:.*", r"(Path|Fraction|Callable|Sequence|Mapping|Iterable|Iterator|Any|ArrayLike|NDArray|Generator)"),
    (r"py:.*", r"(optional|array_like|array|ndarray|DataFrame|Tensor|Module|default .*|or .*|of .*)"),
    # docstrings that name internals outside the curated API of api.md (modules, constants,
    # result classes reached through the public functions); left to a docstring pass
    (r"py:.*", r"(workbench|algorithms)\.(engine|discrimination|probes|units\.catalogue|sweep|_common)\..*"),
    (r"py:.*", r"workbench\.(engine\.Model|ROUNDING_MODES)"),
    (r"py:(data|class|func)", r"[A-Za-z_][A-Za-z0-9_]*"),
    (r"py:class", r".*\s.*"),   # prose napoleon took for a type
]
