"""The Jupyter tape debugger (``tapeviz.debug``), in layers that import downwards:

``model``       the state, cursor and stepping of one session, without widgets
``navigation``  where the moves by call go (step into / over / out, targets, breakpoints), the outline
``markup``      the ``static/`` files (the view's ES module, stylesheet, vendored Graphviz in
                WebAssembly); the views escape with ``tapeviz.escaping``
``listing``     the side-by-side listing and the phase line
``inspector``   a variable's card beside its cotangent's (statistics, heatmap)
``residuals``   the residuals table and their lifetimes
``closure``     the closure-versus-lifted panel of one rule instance
``dot``         a long-lived ``dot -Tsvg`` process
``graph_pane``  the Graphviz source of the cursor's neighbourhood (laid out by the browser)
``calls_tables`` the tables the calls view draws from, made in one pass over the equations
``calls_drawing`` one drawing of the calls view: its Graphviz source, a function of the tables
``calls_pane``  the graph pane's calls view: the program's calls as the outline lists them, each
                one node beside its pullback until opened; ``CallsMode`` for the widget
``diff_pane``   the diff mode: the session's tape diffed with another (``tapeviz.diff``), its
                pane's markup and graph, ``DiffMode`` (``show_diff``) for the widget
``by_call``     ``ByCallMode`` for the widget: step into / over / out, run to a target, breakpoints,
                the first NaN, the next failing check (where they go: ``navigation``)
``frames``      what the view reads: the step, selection and checks parts of a frame
``page``        the debugger without a kernel: the snapshot, static pages of a whole session
``widget``      ``TapeDebugger``: the anywidget whose view (``static/debugger.js``) shows the
                model in every front end and sends the user's actions as messages

Only ``widget`` imports anywidget (and so ipywidgets), and this package imports none of its
modules, so the model, the views and static pages are usable (and testable) without it.
"""
