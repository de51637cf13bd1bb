"""Reverse mode: lifting each rule into a primal and a pullback template (``lift``), inlining
them into a gradient tape (``build``), a function's pullback as tapes (``pullback``: what
``ad.vjp`` and ``ad.jacrev`` run), and the closure form that calls the rules' pullbacks
(``closure``), the reference the lifted form is checked against.
"""
