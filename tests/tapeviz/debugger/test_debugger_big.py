"""A 10,000-equation tape: only a window of rows around the cursor is drawn, and the graph pane
is a neighbourhood, so what a step sends to the browser does not grow with the tape; its static
page embeds the tape once (a few MB), and one over the size limit is refused with what to do."""
import re

import numpy as np
import pytest

import tapeviz
from tapeviz.debugger.page import SessionTooLarge
from tests.support.debug_programs import loop


@pytest.fixture(scope="module")
def big():
    dbg = tapeviz.debug(loop, np.ones(3), 1430, rows=40)
    assert len(dbg.model.eqns) >= 10_000
    return dbg


def rows_drawn(markup: str) -> list[int]:
    return [int(r) for r in re.findall(r'<tr class="tv-row[^"]*" data-row="(\d+)"', markup)]


def test_only_a_window_of_rows_is_drawn(big):
    for step in (0, big.n_steps // 3, big.n_steps - 1):
        big.step_to(step)
        rows = rows_drawn(big._listing)
        cursor = big.model.row_of_eqn[big.model.step.start]
        assert rows == list(range(max(0, cursor - 40), min(len(big.model.rows), cursor + 41)))
        assert f'data-row="{cursor}"' in big._listing
        assert len(big._listing) < 120_000


def test_stepping_inside_the_window_sends_no_new_listing(big):
    """The window stays while the cursor is a quarter of it (10 rows) from its edges; then it is
    centred on the cursor again."""
    big.set_granularity("pullback")
    big.step_to(big.n_steps // 2 + 100)           # the backward pass: the cursor moves up the rows
    sent, n = big._listing, len(big.model.rows)
    moved = 0
    for _ in range(60):
        big.next()
        cursor = big.model.row_of_eqn[big.model.step.start]
        now = rows_drawn(big._listing)
        assert now[0] + 10 <= cursor or now[0] == 0
        assert cursor < now[-1] + 1 - 10 or now[-1] == n - 1
        assert cursor in now and len(now) <= 81
        if big._listing != sent:
            moved += 1
            assert now == list(range(max(0, cursor - 40), min(n, cursor + 41)))
            sent = big._listing
    assert 0 < moved <= 3, moved

def test_graph_pane_and_residuals_stay_small(big):
    big.step_to(big.n_steps // 2)
    assert 0 < big.graph_svg.count('class="node"') < 60
    residual_rows = re.findall(r'<tr(?: class="tv-live")? data-var=', big._residuals)
    assert 0 < len(residual_rows) <= 61 and len(big.model.residual_table()) > 1000


def test_primitive_granularity_on_a_big_tape(big):
    big.step_to(big.n_steps // 2)
    start = big.model.step.start
    big.set_granularity("primitive")
    assert big.n_steps == len(big.model.eqns) and big.model.step.start == start
    big.next()
    assert big.model.step.start == start + 1
    big.set_granularity("pullback")


def test_a_static_page_of_a_big_tape_grows_with_the_tape(big, tmp_path):
    page = big.to_html(tmp_path / "big.html")
    assert page.stat().st_size < 5_000_000
    bundle, _ = big._repr_mimebundle_()
    assert "application/vnd.tapeviz.session+json" not in bundle     # only the notebook renderer asks


def test_a_static_page_over_the_limit_is_refused_with_the_fix(big, tmp_path):
    with pytest.raises(SessionTooLarge, match=r"values=False"):
        big.to_html(tmp_path / "big.html", max_bytes=1_000_000)
    assert not (tmp_path / "big.html").exists()        # nothing half-written
