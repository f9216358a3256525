"""Speed work changes no number: every statistic of the kernel set and the microbenchmarks equals the golden
file recorded before it (tests/timing/stats_golden.py; re-record only for a documented model change)."""

import json

from tests.timing.stats_golden import GOLDEN, collect, differences


def test_every_stat_matches_the_golden_file():
    diff = differences(json.loads(GOLDEN.read_text()), collect())
    assert not diff, f"{len(diff)} statistics changed:\n" + "\n".join(diff[:40])


def test_differences_reports_changed_missing_and_new():
    golden = {"a": {"x": 1.0, "y": 2.0}, "b": {"x": 1.0}}
    now = {"a": {"x": 1.0, "y": 3.0}, "c": {"x": 1.0}}
    assert differences(golden, now) == ["a: y was 2.0, now 3.0", "case missing now: b", "new case: c"]
