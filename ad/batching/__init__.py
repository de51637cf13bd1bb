"""Batching (``ad.vmap``): the rules derived from primitives' traits (``derived``), the loop
over the batch for primitives without one (``fallback``), and a traced tape batched equation
by equation (``interpreter``). The public transformation is ``ad.transforms.vectorize``."""
from .derived import how_batched, rule_for
from .fallback import RaggedBatchError, fallback_loop_p
from .interpreter import batch_tape

__all__ = ["how_batched", "rule_for", "fallback_loop_p", "RaggedBatchError", "batch_tape"]
