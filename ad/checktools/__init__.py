"""The checker's tools: the ``ad-check`` command line (``cli``), the gallery of deliberately
wrong rules (``gallery``), mutation scores (``mutants``), the differential fuzzer (``fuzz``) and
the coverage tables of docs/coverage.md (``coverage``).
"""
