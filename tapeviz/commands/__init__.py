"""tapeviz's programs, on top of everything else in the package (the layer above the debugger):

``cli``          the ``tapeviz`` command (``tapeviz export``: a function's tape drawn or listed,
                 for docs builds; ``tapeviz import``: see ``onnx_import``)
``onnx_import``  ``tapeviz import MODEL.onnx``: an ONNX model's tape or gradient drawn, listed or
                 written back as ONNX
``demo``         ``python -m tapeviz.commands.demo`` (``make demo``): the built-in example's tapes,
                 compiled source, check and figures
``notebooks``    ``python -m tapeviz.commands.notebooks render`` (``make notebooks``): notebooks
                 executed and rendered to static HTML whose debuggers work without a kernel

Nothing below imports this package; ``import tapeviz`` does not load it.
"""
