"""The figure style: titles wrapped to the figure's width."""

from __future__ import annotations

from stcsim.harness.plots import wrap_title


def test_long_title_lines_wrap_to_the_figure_width_and_short_ones_stay():
    scope = "quick: the 2 unique layer shapes per network cheapest to simulate; batch 1; " * 4
    wrapped = wrap_title(f"Fig. 16: speedup\n{scope.strip()}", 6.0)
    lines = wrapped.split("\n")
    assert lines[0] == "Fig. 16: speedup"
    assert len(lines) > 2 and max(len(line) for line in lines) <= int(6.0 * 72 / (10 * 0.55))
    assert " ".join(lines[1:]) == scope.strip()
    assert wrap_title("short", 14.0) == "short"
