"""The debugger's moves by the user's calls, to a target, to a breakpoint, to the first NaN or
Inf and to a failing check: ``ByCallMode``, what ``TapeDebugger`` gains (the buttons of the view's
"by call" row and these methods are one). Where each move goes is ``navigation``'s; this mixin
moves the cursor there and says why when it cannot."""
from __future__ import annotations

from .navigation import describe


class ByCallMode:
    """Stepping by call (see the module). The host has ``model``, ``n_steps``, the ``_frame``
    trait, ``_frame_now``, ``_refresh``, ``_say`` and ``_message``."""

    @property
    def scope(self) -> tuple:
        """The scope path at the cursor: the current step's equations' (``eqn.scope``; their
        common prefix when they differ), ``()`` at the top level."""
        return self.model.nav.scope_of()

    def outline(self, fold: int | None = 2) -> dict:
        """The program's scope tree as plain data: per call its path, name, forward, backward
        and tangent equation counts, residual bytes, check status ("fail", "warn", "pass", None
        before ``run_checks``) and children in call order; a name called ``fold`` times or more
        (``cell#1`` ... ``cell#40``) folded into one group entry whose children are its calls.
        ``tapeviz.debugger.navigation.Navigation.outline`` documents the shape."""
        return self.model.nav.outline(fold)

    @property
    def message(self) -> str:
        """What the last move said: why it did not go where asked, or what it stopped at."""
        return self._message

    def _go(self, index: int | None, failed: str = "", done: str = "", end: int | None = None) -> bool:
        """Move to step ``index`` and redraw (True); None: say ``failed``, moving to ``end``
        if given (a step over or out that runs off the tape stops at its end), and False."""
        self._message = done if index is not None else failed
        to = index if index is not None else end
        if to is None:
            self._frame = self._frame_now()
        else:
            self.model.step_to(to)
            self._refresh()
        return index is not None

    def _edge(self, reverse: bool) -> tuple[str, int]:
        return (("the start of the tape", 0) if reverse else ("the end of the tape", self.n_steps - 1))

    def step_into(self, reverse: bool = False) -> bool:
        """To the next step (the previous, with ``reverse``), entering a call when it is in one.
        False at the end (start) of the tape."""
        where, _ = self._edge(reverse)
        return self._go(self.model.nav.step_into(reverse), f"at {where}")

    def step_over(self, reverse: bool = False) -> bool:
        """To the next step (previous, with ``reverse``) that is not inside a call made from the
        cursor's frame: each call is run whole, in backward its whole pullback block (fan-in
        sums in it included), consecutive calls together. With none left, to the end (start)
        of the tape, and False. Definitions: ``tapeviz.debugger.navigation``."""
        where, end = self._edge(reverse)
        return self._go(self.model.nav.step_over(reverse), f"ran to {where}", end=end)

    def step_out(self, reverse: bool = False) -> bool:
        """To the first step after the cursor's frame (the innermost call whose span contains
        the step) is left (with ``reverse``, the last step before it was entered); at the top
        level, to the next (previous) phase's first (last) step. With none, to the end (start)
        of the tape, and False."""
        where, end = self._edge(reverse)
        return self._go(self.model.nav.step_out(reverse), f"ran to {where}", end=end)

    def run_to(self, target) -> None:
        """To a target: an equation (``"%12"``, as ``select`` names it) or a scope path
        (``("cell#17",)``, ``"cell#17/sig"``: its first step in the cursor's phase if it has
        steps there, else its first step). KeyError for an unknown one."""
        self._go(self.model.nav.run_to(target))

    @property
    def breakpoints(self):
        """The breakpoints: a set of targets (``run_to``'s), checked when added; a scope's hits
        where the call's forward body and where its pullback block begin. ``cont()`` runs to the next."""
        return self.model.breakpoints

    @breakpoints.setter
    def breakpoints(self, targets) -> None:
        checked = [self.model.nav.target(t) for t in targets]      # all or nothing
        self.model.breakpoints.clear()
        self.model.breakpoints |= checked

    def cont(self, reverse: bool = False) -> bool:
        """Run to the next step (the previous, with ``reverse``) where a breakpoint is hit;
        False, with a ``message``, when none is ahead."""
        if not self.model.breakpoints:
            return self._go(None, "no breakpoints: add targets to dbg.breakpoints")
        hit = self.model.nav.next_hit(self.model.breakpoints, reverse)
        if hit is None:
            return self._go(None, f"no breakpoint {'behind' if reverse else 'ahead'}")
        return self._go(hit[0], done="breakpoint " + ", ".join(describe(t) for t in hit[1]))

    def run_to_nonfinite(self, from_cursor: bool = False) -> bool:
        """To the first step whose outputs contain NaN or Inf (the first after the cursor's,
        with ``from_cursor``); False, with a ``message``, when there is none."""
        j = self.model.nav.nonfinite_step(from_cursor)
        return self._go(j, f"no NaN or Inf {'after this step' if from_cursor else 'in this tape'}",
                        done="NaN or Inf in " + ", ".join(self.model.written(self.model.step_list[j]))
                        if j is not None else "")

    def run_to_failure(self, reverse: bool = False) -> bool:
        """To the next step (the previous, with ``reverse``) with a failing check on one of its
        equations (``run_checks`` first); False, with a ``message``, when none is."""
        if self.model.report is None:
            return self._go(None, "no checks have run: call run_checks() first")
        return self._go(self.model.nav.failure_step(reverse),
                        f"no failing check {'behind' if reverse else 'ahead'}")

    def _toggle(self, target, on=True) -> None:
        (self.model.breakpoints.add if on else self.model.breakpoints.discard)(target)

    def _from_view(self, action, *args) -> None:
        """A target typed or clicked in the browser: a bad one is reported, never raised."""
        try:
            action(*args)
        except (KeyError, TypeError, ValueError) as exc:
            self._say(str(exc.args[0]))
