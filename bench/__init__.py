"""Benchmarks: side-by-side ratios in one process, medians of CPU time, one BLAS thread."""
