"""GEMM algorithms built on matrix-unit presets (they use :func:`workbench.gemm` only).

Each algorithm is ``f(A, B, C=None, *, model, **params)`` returning a float64 array
(``return_words=True`` also returns the intermediate words):

``markidis``        Markidis et al. (2018): fp16 word + unscaled residual, 3 or 4 products.
``ootomo_yokota``   Ootomo & Yokota (2022): halfhalf / tf32tf32, large product
                    accumulated outside the unit with round-to-nearest.
``multiword``       Fasi et al. (2023), Mary & Mikaitis (2025) Section 4: p scaled words;
                    the experiment of Khattak & Mikaitis (2025) Figure 7.
``cutlass_xtf32``   CUTLASS 3xTF32 / 4xTF32.
``bf16xn``          Henry et al. (2019) bf16x3 / bf16x6 / bf16x9.
``ozaki``           Ozaki scheme (slices) and Ozaki scheme II (CRT) on the exact
                    INT8 unit :data:`INT8_UNIT`.
``ozaki2_fp8``      Ozaki scheme II with FP8 words (Uchino, Ozaki & Imamura 2026;
                    GEMMul8's FP8 moduli) on an FP8 preset, accurate / fast /
                    fast-improved scaling, ``moduli="auto"`` (:mod:`algorithms.adp`).
``ozaki1_fp8``      Ozaki scheme (slices) with FP8 digits on an FP8 preset.

The words of the first five are, by default, in the unit's own input format: the
papers' fp16, tf32 or bf16 on the papers' units, the same splits in fp8 or a custom
format on others (``word_format=``, or Ootomo-Yokota's ``variant=``, fixes the
format; a format the unit cannot hold is refused, naming both).

``get(name)`` / ``available()`` / ``ALGORITHMS`` name them by string.

Unit calls: every algorithm that calls :func:`workbench.gemm` on its unit takes

``input_rounding``  how the unit converts operands wider than its input format: ``None``
                    (the default: they must be representable), ``"rz"``, ``"rne"`` or
                    ``"rna"`` (see the preset's ``wider_inputs``).  The words an
                    algorithm forms are already in the unit's format, so they pass
                    unchanged.
``device``          where those calls run: ``"cpu"`` (default) or ``"cuda"`` (the same
                    bits on an NVIDIA GPU; :mod:`workbench.engine.gpu`).

Linear solvers whose factorisation runs on a unit (:data:`SOLVERS` by name):
``lu`` / ``cholesky`` (Haidar et al. 2018's blocked factorisations, trailing
updates on the unit), ``lu_ir`` and ``gmres_ir`` (Carson & Higham 2017/2018
iterative refinement), returning :class:`RefinementResult`.  Input
generators of Ootomo & Yokota's exponent ranges are
:func:`workbench.numbers.inputs.exponent_range` (``type="type1"``: exponents -15..14).
"""

from ._registry import ALGORITHMS, SOLVERS, available, get
from .bf16xn import bf16xn
from .cutlass import cutlass_xtf32
from .lu import Factorization, FactorizationError, cholesky, lu
from .markidis import markidis
from .multiword import multiword
from .ootomo_yokota import ootomo_yokota
from .ozaki import INT8_UNIT, Int8Unit, ozaki
from .ozaki_fp8 import FP8_MODULI, fp8_exact_unit, ozaki1_fp8, ozaki2_fp8
from .refinement import RefinementResult, gmres_ir, lu_ir

__all__ = ["ALGORITHMS", "FP8_MODULI", "INT8_UNIT", "Int8Unit", "available", "bf16xn", "cutlass_xtf32",
           "fp8_exact_unit", "get", "markidis", "multiword", "ootomo_yokota", "ozaki", "ozaki1_fp8", "ozaki2_fp8",
           "SOLVERS", "Factorization", "FactorizationError", "RefinementResult", "cholesky", "gmres_ir", "lu", "lu_ir"]
