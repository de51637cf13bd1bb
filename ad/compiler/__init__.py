"""Compilation: a tape to readable numpy source (``codegen``, which writes each equation as
``emit`` spells it; a long loop written back as a Python loop, ``reroll``), or elementwise chains
fused into C loops (``fused``, whose driver ``emit`` writes too); ``backends``: ``ad.compile``,
the switch between the two.
"""
