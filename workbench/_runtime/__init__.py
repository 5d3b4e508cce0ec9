"""Runtime plumbing every layer may use: the thread count of a compiled pass (threads) and
the CPU target numba compiles for (cpu_target) and where its compiled code is kept
(compile_cache).  Imports nothing else of the workbench."""
