"""The public transformations: ``grad``, ``value_and_grad``, ``vjp``, ``grad_tape``
(``gradients``), ``jvp``/``linearize`` (``linearization``, forward mode), Jacobians and Hessians
(``jacobians``), and the guarded tape cache they share (``cache``).
"""
