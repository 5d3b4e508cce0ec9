"""``workbench probe TARGET``: run the inference and print the feature sheet.

Registered in :mod:`workbench.cli` with :func:`add_arguments` and :func:`run_command`
(the CLI holds no logic of its own; docs/architecture.md, "Layers").
"""

from __future__ import annotations

import argparse
import sys

from ..numbers.validation import cli_count, cli_name

__all__ = ["add_arguments", "run_command", "HELP", "DEFAULT_VERIFY"]

HELP = "probe a matrix unit or library as a black box and print its feature sheet"
#: outputs compared in a unit's randomised verification unless --verify N says otherwise
DEFAULT_VERIFY = 20000


def _count_or_file(text: str) -> int | str:
    """``--verify``'s value: an integer is a count of outputs (a unit target; checked by
    :func:`~workbench.numbers.validation.cli_count`), anything else the path of a saved library model (a
    library target)."""
    try:
        int(text.strip())
    except ValueError:
        return cli_name(text)
    return cli_count(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="TARGET", type=cli_name,
                        help="library GEMMs as unit + schedule: numpy-fp64, numpy-fp32, torch-cpu-fp32, torch-cpu-bf16; units: numpy-fp16, torch-cpu-bf16, torch-cpu-fp16, torch-cpu-fp32, mldtypes-bf16, "
                             "a unit: DEVICE:IN:OUT[:INSTRUCTION[:VARIANT]] (e.g. H100:fp16:fp32; a preset: prefix is allowed), "
                             "a catalogue name (hopper/wgmma/fp16->fp32) or a unit file (.toml); "
                             "torch-cuda-IN-OUT, cupy-IN-OUT")
    parser.add_argument("--verify", type=_count_or_file, default=None, metavar="N|FILE",
                        help=f"a unit target: N outputs compared in the randomised verification (default "
                             f"{DEFAULT_VERIFY}); a library target: re-check the library model saved in FILE (--save) "
                             f"against this machine's library, warning where its environment differs")
    parser.add_argument("--seed", type=cli_count, default=0, help="seed of the random verification inputs")
    parser.add_argument("--fasi", action="store_true", help="also print the Fasi et al. 2021 test suite (unit targets)")
    parser.add_argument("--save", metavar="UNIT.toml", default=None,
                        help="a unit target: write the inferred unit to this unit file (workbench.save_unit) when it "
                             "verified bit-exactly; refused, with the reason, otherwise.  A library target: write the "
                             "library model (unit, schedule, the library, kernel and threads it ran with, the "
                             "verification's counts), marked verified or not verified")
    parser.add_argument("--recover", action="store_true",
                        help="a library target: recover the library's schedule from the black box (per output: the "
                             "split of K that gives its bits, grouped by tiles, K ranges by bisection; minutes) "
                             "instead of trusting the hand-written candidate, then verify it")
    parser.add_argument("--k-max", type=cli_count, default=8192, metavar="K",
                        help="with --recover: the longest K probed (default 8192)")


def _refuse_for_library(name: str, args: argparse.Namespace) -> None:
    """A ValueError (exit status 2, one line) for an option that has no meaning for the
    library target ``name``."""
    if args.fasi:
        raise ValueError(f"--fasi does not apply to the library target {name}: the Fasi et al. tests probe a matrix "
                         f"unit's arithmetic, a library target is probed as a unit and a schedule")
    if isinstance(args.verify, int):
        raise ValueError(f"--verify {args.verify} does not apply to the library target {name}: it verifies on its "
                         f"own products; --verify FILE re-checks a library model saved with --save")
    if args.recover and args.verify is not None:
        raise ValueError(f"--recover and --verify {args.verify} together: --verify FILE re-checks a saved library "
                         f"model, --recover probes a new one; run them one at a time")
    if args.verify is not None and args.save is not None:
        raise ValueError(f"--verify {args.verify} and --save {args.save} together: --verify FILE re-checks a saved "
                         f"library model, --save probes and writes a new one; run them one at a time")


def _run_library(name: str, args: argparse.Namespace) -> int:
    """The library probe (or, with --verify FILE, the check of a saved library model);
    0 when verified, 1 otherwise."""
    from ..probes.library import probe_library, save_library_model, verify_saved

    _refuse_for_library(name, args)
    if args.verify is not None:
        check = verify_saved(name, args.verify, seed=args.seed)
        print(check.sheet())
        return 0 if check.verified else 1
    report = probe_library(name, seed=args.seed, recover=args.recover, k_max=args.k_max,
                           progress=(lambda text: print(f"  recovering {text}", file=sys.stderr, flush=True))
                           if args.recover else None)
    print(report.sheet())
    if args.save is not None:
        path = save_library_model(report, args.save)
        bad, total = report.counts
        why = "" if report.repeatable else "; the library is not deterministic across runs"
        print(f"saved {path}" if report.verified else
              f"saved {path}, marked not verified ({bad} of {total} outputs differ{why})")
    return 0 if report.verified else 1


def run_command(args: argparse.Namespace) -> int:
    """Returns 0 when the proposed model verified bit-exactly, 1 otherwise.  The library
    targets (:data:`workbench.probes.library.LIBRARIES`) get the library probe: unit and
    schedule, determinism across runs and threads, FPRev's tree; options that do not
    apply to them are refused (a ValueError: exit status 2)."""
    from ..probes.inference import infer
    from ..probes.library import LIBRARIES
    from ..probes.targets import target

    name = args.target.strip().lower()
    if name in LIBRARIES:
        return _run_library(name, args)
    if args.recover:
        raise ValueError(f"--recover applies to the library targets ({', '.join(LIBRARIES)}): a unit target "
                         f"{args.target} is inferred (its parameters from the probes) and verified anyway")
    if isinstance(args.verify, str):
        raise ValueError(f"--verify {args.verify}: a unit target takes --verify N (the outputs compared); re-checking "
                         f"a saved library model needs a library target ({', '.join(LIBRARIES)})")
    n_verify = DEFAULT_VERIFY if args.verify is None else args.verify
    bb = target(args.target)
    res = infer(bb, n_verify=n_verify, seed=args.seed, progress=True)
    print(res.sheet())
    if args.fasi:
        from ..probes.fasi import fasi_suite

        print("Fasi et al. 2021 test suite (generalised constants):")
        for test, t in fasi_suite(bb).items():
            print(f"  {test:<30} {t.conclusion!s:<24} {t.meaning}")
    if args.save is not None:
        if not (res.verified and res.model is not None):
            print(f"workbench probe: not saved to {args.save}: the unit is {res.verdict}", file=sys.stderr)
            return 1
        from ..units.unitfile import Provenance, save_unit

        prov = Provenance(origin="probed", target=res.target or args.target,
                          verification={"outputs_checked": res.n_verified, "outputs_agreed": res.n_verified},
                          notes=f"workbench probe {args.target} --verify {n_verify} --seed {args.seed}")
        print(f"saved {save_unit(res.model, args.save, provenance=prov)}")
    return 0 if res.verified else 1
