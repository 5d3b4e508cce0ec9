"""Command line: ``workbench <command> ...``, one module of this package per command.

Thin by design: each command parses its arguments, calls the library and prints.  A
command module provides ``HELP``, ``add_arguments(parser)`` and ``run_command(args)``
(and ``SHOWS_COMPILING = True`` where its own progress bar says when kernels compile;
otherwise one line on a terminal's stderr does) and keeps its heavy imports inside
``run_command``, so building the parser stays cheap;
:data:`COMMANDS` lists them in the order ``workbench --help`` shows.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

# command name -> module of this package
COMMANDS: dict[str, str] = {
    "formats": "formats",
    "presets": "presets",
    "explain": "explain",
    "sweep": "sweep",
    "probe": "probe",
    "discriminate": "discriminate",
    "emulate": "emulate",
    "reproduce": "reproduce",
    "experiments": "experiments",
    "notebooks": "notebooks",
    "vectors": "vectors",
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command."""
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Mixed-precision workbench: bit-exact models of GPU matrix multiply-accumulate units.",
    )
    from .._version import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(f"{__name__}.{module_name}")
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run_command, _shows_compiling=getattr(module, "SHOWS_COMPILING", False))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``workbench`` with ``argv`` (default: ``sys.argv[1:]``); the exit status.

    A reader that stops early (``workbench presets | head``) ends the command quietly with
    status 0, as other Unix tools do."""
    try:
        status = _run(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # what is still buffered goes nowhere, so that the interpreter's last flush succeeds
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return status


def _run(argv: Sequence[str] | None) -> int:
    """Parse ``argv`` and run its command; the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error, already printed by argparse (2)
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        if args._shows_compiling or not sys.stderr.isatty():
            return args._run(args)
        from .._runtime.compile_cache import compile_notice

        with compile_notice():      # a first run's pause explained, for a person at a terminal
            return args._run(args)
    except BrokenPipeError:   # a ConnectionError, but not the command's: main() ends quietly
        raise
    except (ValueError, TypeError, FileNotFoundError, ConnectionError, MemoryError) as exc:
        print(f"workbench {args.command}: error: {exc}", file=sys.stderr)
        return 2
