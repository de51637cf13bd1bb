"""The Jupyter tape debugger (``tapeviz.debug``), in layers that import downwards:

``model``       the state, cursor and stepping of one session, without widgets
``markup``      the ``static/`` files (the view's ES module, stylesheet, vendored Graphviz in
                WebAssembly); the views escape with ``tapeviz.escaping``
``listing``     the side-by-side listing and the phase line
``inspector``   a variable's card beside its cotangent's (statistics, heatmap)
``residuals``   the residuals table and their lifetimes
``closure``     the closure-versus-lifted panel of one rule instance
``dot``         a long-lived ``dot -Tsvg`` process
``graph_pane``  the Graphviz source of the cursor's neighbourhood (laid out by the browser)
``frames``      what the view reads: the step, selection and checks parts of a frame
``page``        the debugger without a kernel: the snapshot, static pages of a whole session
``widget``      ``TapeDebugger``: the anywidget whose view (``static/debugger.js``) shows the
                model in every front end and sends the user's actions as messages

Only ``widget`` imports anywidget (and so ipywidgets), and this package imports none of its
modules, so the model, the views and static pages are usable (and testable) without it.
"""
