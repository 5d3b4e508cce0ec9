"""``workbench probe TARGET``: run the inference and print the feature sheet.

Registered in :mod:`workbench.cli` with :func:`add_arguments` and :func:`run_command`
(the CLI holds no logic of its own; docs/architecture.md, "Layers").
"""

from __future__ import annotations

import argparse

from ..gate import cli_count, cli_name

__all__ = ["add_arguments", "run_command", "HELP"]

HELP = "probe a matrix unit or library as a black box and print its feature sheet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="TARGET", type=cli_name,
                        help="numpy-fp32, numpy-fp16, torch-cpu-bf16, torch-cpu-fp16, torch-cpu-fp32, mldtypes-bf16, "
                             "preset:DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]] (e.g. preset:H100:fp16:fp32), "
                             "torch-cuda-IN-OUT, cupy-IN-OUT")
    parser.add_argument("--verify", type=cli_count, default=20000, metavar="N",
                        help="outputs compared in the randomised verification (default 20000)")
    parser.add_argument("--seed", type=cli_count, default=0, help="seed of the random verification inputs")
    parser.add_argument("--fasi", action="store_true", help="also print the Fasi et al. 2021 test suite")


def run_command(args: argparse.Namespace) -> int:
    """Returns 0 when the proposed model verified bit-exactly, 1 otherwise."""
    from ..probes.inference import infer
    from ..probes.targets import target

    bb = target(args.target)
    res = infer(bb, n_verify=args.verify, seed=args.seed, progress=True)
    print(res.sheet())
    if args.fasi:
        from ..probes.fasi import fasi_suite

        print("Fasi et al. 2021 test suite (generalised constants):")
        for name, t in fasi_suite(bb).items():
            print(f"  {name:<30} {t.conclusion!s:<24} {t.meaning}")
    return 0 if res.verified else 1
