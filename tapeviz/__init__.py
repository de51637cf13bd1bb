"""tapeviz: pictures of ad's tapes, drawn from one networkx model.

The model (``to_networkx``) names every node as the text listing does (``%7``, ``eq/%7``);
queries on it find the forward and backward sections, a pullback block, the residuals, a
neighbourhood and the collapsed view; ``to_graphviz``/``export``/``render`` draw it.
"""
from .collapse import collapse
from .debugger import TapeDebugger, debug
from .draw import scene, to_graphviz
from .export import export, listing
from .graph import (Residual, annotate, backward, forward, neighbourhood, pullback_block, residuals,
                    summarize, to_networkx, values_of)
from .labels import primitive_colour
from .render import RenderError, RendererNotFound, render

__all__ = [
    # the model
    "to_networkx", "values_of", "annotate", "summarize",
    # queries
    "forward", "backward", "pullback_block", "residuals", "Residual", "neighbourhood", "collapse",
    # drawing and files
    "to_graphviz", "scene", "primitive_colour", "export", "listing", "render",
    "RenderError", "RendererNotFound",
    # the Jupyter debugger
    "debug", "TapeDebugger",
]
