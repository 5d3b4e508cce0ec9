"""Numbers: formats and rounding, input checks, exact arithmetic, error metrics, block
scaling and random inputs - the layer below the engine, which imports nothing of the
workbench but :mod:`workbench._runtime`."""
