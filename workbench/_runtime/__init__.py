"""Runtime plumbing every layer may use: the thread count of a compiled pass (threads) and
the CPU target numba compiles for (cpu_target).  Imports nothing else of the workbench."""
