"""The rule library: numpy primitives and their rules, one module per family.

Importing this package fills the dispatch tables (``ad.dispatch``) and sets every primitive's
rule. Each module declares primitives, their rules and their samples together, and writes the
other numpy functions of its family as compositions of those primitives.
"""
from . import creation, elementwise, reductions, shape, indexing, contraction  # noqa: F401
from . import linalg, linalg_functions, numeric, statistics, selection, values, arrays  # noqa: F401
from . import fft, array_api  # noqa: F401
