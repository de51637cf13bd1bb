"""The Jupyter tape debugger (``tapeviz.debug``), in layers that import downwards:

``model``       the state, cursor and stepping of one session, without widgets
``markup``      escaping, attributes and the ``static/`` files (stylesheet, click handlers)
``listing``     the side-by-side listing and the phase line
``inspector``   a variable's card beside its cotangent's (statistics, heatmap)
``residuals``   the residuals table and their lifetimes
``closure``     the closure-versus-lifted panel of one rule instance
``dot``         a long-lived ``dot -Tsvg`` process
``graph_pane``  the drawing of the cursor's neighbourhood
``widget``      ``TapeDebugger``: the ipywidgets that show the views and drive the model

Only ``widget`` imports ipywidgets, and this package imports none of its modules, so the model
and the views are usable (and testable) without it.
"""
