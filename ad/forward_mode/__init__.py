"""Forward mode, derived from the reverse rules, in the stages of reverse mode: a lifted pullback
(linear in its cotangent) is transposed (``transposition``) into a pushforward template
(``pushforward``, the mirror of ``reverse_mode.lift``), the templates are inlined into a tangent
tape (``build``), and the closure form pushes tangents through the rules eagerly (``closure``).
``ad.jvp`` and ``ad.linearize`` are in ``ad.transforms.linearization``.
"""
