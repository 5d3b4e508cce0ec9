"""``workbench probe TARGET``: run the inference and print the feature sheet.

Registered in :mod:`workbench.cli` with :func:`add_arguments` and :func:`run_command`
(the CLI holds no logic of its own; docs/architecture.md, "Layers").
"""

from __future__ import annotations

import argparse
import sys

from ..gate import cli_count, cli_name

__all__ = ["add_arguments", "run_command", "HELP"]

HELP = "probe a matrix unit or library as a black box and print its feature sheet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="TARGET", type=cli_name,
                        help="library GEMMs as unit + schedule: numpy-fp64, numpy-fp32, torch-cpu-fp32, torch-cpu-bf16; units: numpy-fp16, torch-cpu-bf16, torch-cpu-fp16, torch-cpu-fp32, mldtypes-bf16, "
                             "a unit: DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]] (e.g. H100:fp16:fp32; a preset: prefix is allowed), "
                             "a catalogue name (hopper/wgmma/fp16->fp32) or a unit file (.toml); "
                             "torch-cuda-IN-OUT, cupy-IN-OUT")
    parser.add_argument("--verify", type=cli_count, default=20000, metavar="N",
                        help="outputs compared in the randomised verification (default 20000)")
    parser.add_argument("--seed", type=cli_count, default=0, help="seed of the random verification inputs")
    parser.add_argument("--fasi", action="store_true", help="also print the Fasi et al. 2021 test suite")
    parser.add_argument("--save", metavar="UNIT.toml", default=None,
                        help="write the inferred unit to this unit file (workbench.save_unit) when it verified "
                             "bit-exactly; refused, with the reason, otherwise")


def run_command(args: argparse.Namespace) -> int:
    """Returns 0 when the proposed model verified bit-exactly, 1 otherwise.  The library
    targets (:data:`workbench.probes.library.LIBRARIES`) get the library probe: unit and
    schedule, determinism across runs and threads, FPRev's tree."""
    from ..probes.inference import infer
    from ..probes.library import LIBRARIES, probe_library
    from ..probes.targets import target

    if args.target.strip().lower() in LIBRARIES:
        report = probe_library(args.target.strip().lower(), seed=args.seed)
        print(report.sheet())
        return 0 if report.verified else 1

    bb = target(args.target)
    res = infer(bb, n_verify=args.verify, seed=args.seed, progress=True)
    print(res.sheet())
    if args.fasi:
        from ..probes.fasi import fasi_suite

        print("Fasi et al. 2021 test suite (generalised constants):")
        for name, t in fasi_suite(bb).items():
            print(f"  {name:<30} {t.conclusion!s:<24} {t.meaning}")
    if args.save is not None:
        if not (res.verified and res.model is not None):
            print(f"workbench probe: not saved to {args.save}: the unit is {res.verdict}", file=sys.stderr)
            return 1
        from ..unitfile import Provenance, save_unit

        prov = Provenance(origin="probed", target=res.target or args.target,
                          verification={"outputs_checked": res.n_verified, "outputs_agreed": res.n_verified},
                          notes=f"workbench probe {args.target} --verify {args.verify} --seed {args.seed}")
        print(f"saved {save_unit(res.model, args.save, provenance=prov)}")
    return 0 if res.verified else 1
