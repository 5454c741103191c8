"""Issue 24 acceptance 2 over 120 days from 2025-01-06 for two charts, measured by bench/feelings_show.py's own
function: her feelings show in her words (few stock tails, low days read low) and in arousal and dominance."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "feelings_show.py"


@cache
def measured() -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location("feelings_show", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.measure(str(BENCH.parents[1]), 120, "2025-01-06T04:00")


def figures() -> dict[str, Any]:
    return measured()["charts"]


@pytest.mark.parametrize("chart", ["A", "B"])
def test_stock_tails_are_rare_and_her_lowest_days_read_low(chart) -> None:
    f = figures()[chart]
    assert f["sentences"] > 1500
    assert f["stock_tail_share"] <= 0.08
    assert f["negative_share_lowest10"] >= 0.15
    assert f["negative_share_lowest10"] >= 3 * f["negative_share_highest10"]


@pytest.mark.parametrize("chart", ["A", "B"])
def test_arousal_and_dominance_move_with_what_she_does_and_feels(chart) -> None:
    f = figures()[chart]
    assert f["arousal_sd"] >= 0.05
    assert f["dominance_sd"] >= 0.04


def test_two_charts_read_and_watch_different_things_and_eat_one_dinner_an_evening() -> None:
    out = measured()
    assert min(out["books_shows"].values()) >= 5
    assert out["books_shows_overlap"] <= 0.5
    # her own cast (issue 24 item 3): two charts, two sets of friends
    assert min(len(n) for n in out["friend_names"].values()) >= 4
    assert out["friend_names_overlap"] < 0.5
    assert all(c["two_dinner_evenings"] <= 1 for c in out["charts"].values())
