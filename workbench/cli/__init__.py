"""Command line: ``workbench <command> ...``, one module of this package per command.

Thin by design: each command parses its arguments, calls the library and prints.  A
command module provides ``HELP``, ``add_arguments(parser)`` and ``run_command(args)``
and keeps its heavy imports inside ``run_command``, so building the parser stays cheap;
:data:`COMMANDS` lists them in the order ``workbench --help`` shows.
"""

from __future__ import annotations

import argparse
import importlib
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
    "reproduce": "reproduce",
    "experiments": "experiments",
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
        p.set_defaults(_run=module.run_command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``workbench`` with ``argv`` (default: ``sys.argv[1:]``); the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error, already printed by argparse (2)
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return args._run(args)
    except (ValueError, TypeError, FileNotFoundError, ConnectionError) as exc:
        print(f"workbench {args.command}: error: {exc}", file=sys.stderr)
        return 2
