"""The version of the package, set here only: pyproject.toml reads it (``dynamic``), the wheel's
metadata carries it, ``workbench --version`` prints it and unit files record it.  A module of its
own so that the command line and unit files can name it without importing the ``workbench``
facade (tests/test_import_graph.py)."""

__version__ = "0.1.0"
