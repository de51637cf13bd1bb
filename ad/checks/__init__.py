"""Inconsistency checks for rules and programs: ``check_rule`` (one rule at given operands) and
``check`` (a whole traced program), a superset of ChainRulesTestUtils, Mooncake,
torch.autograd.gradcheck and jax/autograd ``check_grads``, plus the checks only a tape-based
system can run (closure versus lifted, residual mutation, the culprit equation).

See ``settings.RULE_CHECKS`` / ``settings.PROGRAM_CHECKS`` for what each check verifies,
``gallery`` for a deliberately wrong rule per check, and ``forms`` for the closure-versus-lifted
comparison the debugger shares.
"""
from .program import check
from .report import CheckFailure, CheckResult, ProgramReport, RuleReport
from .rule import check_rule
from .settings import Options

__all__ = ["check_rule", "check", "RuleReport", "ProgramReport", "CheckResult", "CheckFailure", "Options"]
