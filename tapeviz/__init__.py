"""tapeviz: pictures of ad's tapes, drawn from one networkx model, and a Jupyter debugger.

The model (``to_networkx``) names every node as the text listing does (``%7``, ``eq/%7``);
queries on it find the forward and backward sections, a pullback block, the residuals, a
neighbourhood and the collapsed view (by rule instance, source or the user's calls, ``Eqn.scope``);
``to_graphviz``/``export``/``render`` draw it, the user's calls as nested clusters. Forward mode's
tapes (``ad.linearize``) have a tangent phase and pushforward blocks (``pushforward_block``);
``debug_jvp`` steps through them as ``debug`` steps through a gradient.
``import tapeviz`` does not import ipywidgets: the debugger's widget (``tapeviz.debugger``) is
imported by the first ``debug`` call or use of ``TapeDebugger``.

>>> tape = ad.trace(lambda x: np.sum(np.sin(x) * x), np.ones(3))
>>> graph = tapeviz.to_networkx(tape)
>>> graph.nodes["eq/%1"]["primitive"], sorted(graph.succ["%0"])
('sin', ['eq/%1', 'eq/%2'])
"""
from .grouping import collapse
from .draw import scene, to_graphviz
from .diffing import TapeDiff, diff
from .figures import export, listing
from .graph import (Residual, annotate, backward, forward, neighbourhood, pullback_block, pushforward_block,
                    residuals, to_networkx)
from .labels import primitive_colour
from .renderer import RenderError, RendererNotFound, RenderWarning, render
from .values import summarize, values_of

__all__ = [
    # the model
    "to_networkx", "values_of", "annotate", "summarize",
    # queries
    "forward", "backward", "pullback_block", "pushforward_block", "residuals", "Residual", "neighbourhood", "collapse",
    # drawing and files
    "to_graphviz", "scene", "primitive_colour", "export", "listing", "render",
    "RenderError", "RendererNotFound", "RenderWarning",
    # two tapes compared
    "diff", "TapeDiff",
    # the Jupyter debugger
    "debug", "debug_jvp", "TapeDebugger", "JvpDebugger",
]


def debug(f, *args, argnums=0, **options) -> "TapeDebugger":
    """A debugger for the gradient of ``f`` at ``args`` (with respect to ``argnums``).

    Options: ``rows`` (listing rows drawn on each side of the cursor, default 40) and ``graph_k``
    (equations around the cursor in the graph pane, default 2). The debugger is an anywidget:
    shown by any Jupyter front end, and in marimo by ``mo.ui.anywidget(dbg)``;
    ``dbg.to_html(path)`` writes a page that steps through it with no kernel.

    >>> from ad.examples import mlp_example, mlp_loss
    >>> dbg = tapeviz.debug(mlp_loss, *mlp_example())
    >>> dbg.last()
    >>> dbg.phase_line
    'backward, step 33 of 33: pullback of %6 (matmul) (2 equations)'
    >>> dbg
    <TapeDebugger: backward step 33 of 33, 51 equations>
    """
    return _widget().TapeDebugger(f, args, argnums, **options)


def debug_jvp(f, primals, tangents, **options) -> "TapeDebugger":
    """A debugger for forward mode: ``f``'s linearization at ``primals`` along ``tangents``
    (tuples, as ``ad.jvp`` takes them; a None tangent leaves that argument constant). The forward
    listing and the tangent listing are side by side, each primal equation's pushforward block
    (derived from its rule's pullback) beside it; steps run through the forward section, then
    the pushforward blocks in forward order; the inspector shows a value beside its tangent.
    ``run_checks()`` runs ``ad.check`` (its ``program.jvp`` and ``fd.jvp`` check forward mode)
    and pins the findings on the primal equations and their pushforward blocks;
    ``show_closure()`` compares a primal equation's closure pushforward with its block's
    tangents. Options, stepping, selection and ``to_html`` are ``debug``'s.

    >>> dbg = tapeviz.debug_jvp(lambda x: np.sum(np.sin(x) * 2.0), (np.ones(3),), (np.ones(3),))
    >>> dbg.step_to(3)
    >>> dbg.phase_line
    'tangent, step 4 of 6: pushforward of %1 (sin) (2 equations)'
    >>> dbg.select("%1")
    >>> dbg.model.tangents["%1"]
    '%6'
    """
    return _widget().JvpDebugger(f, primals, tangents, **options)


def __getattr__(name: str):
    if name in ("TapeDebugger", "JvpDebugger"):
        return getattr(_widget(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _widget():
    """The debugger's widget module, imported on first use: it imports ipywidgets, which drawing
    and exporting do not need (the documented optional import)."""
    from .debugger import widget
    return widget
