"""GEMM algorithms built on matrix-unit presets."""
