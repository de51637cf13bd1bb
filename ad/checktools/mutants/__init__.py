"""Mutation testing of the rule library: how many wrong rules would the checker catch?

For every registered primitive with samples, its rule is lifted (``ad.reverse_mode.lift``) at one sample
(the first sample's largest shape set, its first dtype) into a pullback template: a small tape
reading the operands, the primal body's values and the cotangent. Each mutation operator
rewrites that tape into a *mutant* (a sign flipped, a term dropped, operands swapped, the wrong
operand transposed, a reduction forgotten, the wrong residual read, a value doubled, the
cotangent returned unchanged, the cotangent written in place). ``template_rule`` turns a
template back into an ordinary rule, so the mutant is checked exactly like a candidate rule:
``check_rule(call, *operands, rule=mutant_rule)``; no registered rule is replaced.

A mutant is *caught* when some check fails. A mutant whose gradient equals the original's is
*equivalent* (no check could or should catch it): that is decided numerically, on the sample's
operands and on fresh draws with random cotangents, after projecting as the builder does, and
named by its structural reason when it has one (the mutated value never reaches a cotangent,
it is zero, a reduction to the same shape). A mutant that cannot even be evaluated (shapes that
do not fit) is *stillborn* and not counted. The score is caught / (caught + survived).

    >>> from ad.checktools import mutants
    >>> report = mutants.run(["sin"])
    >>> report.score, len(report.survivors)
    (1.0, 0)

The package: ``template`` (``Target``, ``Mutant``, ``template_rule``, ``targets``), ``operators``
(the mutation operators, ``mutants``), ``scoring`` (equivalence, ``score_target``, ``run``) and
``report`` (``MutationReport``, its record in docs/checks.md); this module re-exports their
public names.
"""
from ...primitives import REGISTRY  # noqa: F401  (ad-check --mutants checks --only names against it)
from .operators import (OPERATORS, REDUCTIONS, RESIDUAL_CHOICES, mutants, op_drop_term, op_identity,
                        op_in_place, op_reduction, op_residual, op_scale, op_sign, op_swap, op_transpose)
from .report import BEGIN, END, MutationReport, Outcome, markdown, record
from .scoring import EQUIVALENCE_DRAWS, SUBGRADIENT, Point, differs, draws, equivalence, run, score_target
from .template import Mutant, Target, original, rule_operands, same, target, targets, template_rule

__all__ = [
    "Target", "Mutant", "rule_operands", "template_rule", "original", "targets", "target", "same",
    "OPERATORS", "REDUCTIONS", "RESIDUAL_CHOICES", "mutants", "op_sign", "op_scale", "op_drop_term", "op_swap",
    "op_transpose", "op_reduction", "op_residual", "op_identity", "op_in_place",
    "EQUIVALENCE_DRAWS", "Point", "draws", "differs", "equivalence", "score_target", "SUBGRADIENT", "run",
    "Outcome", "MutationReport", "BEGIN", "END", "markdown", "record",
]
