"""The caller's `affect` is accepted exactly as the OpenAPI `Affect` schema says (issue 12, acceptance 3)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from engine.appraisal import affect_push
from engine.errors import InputError
from tests.api_support import ApiHarness, turn
from tests.memory_helpers import embedder

OPENAPI = Path(__file__).resolve().parent.parent / "daemon" / "api" / "openapi.json"
AFFECT_SCHEMA = json.loads(OPENAPI.read_text(encoding="utf-8"))["components"]["schemas"]["Affect"]
VALIDATOR = Draft202012Validator(AFFECT_SCHEMA)

# Keys the schema knows, keys the engine once knew ("v"), a label the schema once listed, and a typo.
keys = st.sampled_from(["valence", "arousal", "dominance", "intensity", "label", "v", "a", "d", "valance"])
values = (st.floats(-2.0, 2.0, allow_nan=False) | st.integers(-2, 2) | st.booleans() | st.none()
          | st.sampled_from(["sad", "0.5", ""]))
near = st.floats(-1.2, 1.2, allow_nan=False) | st.sampled_from([-1, 0, 1, -1.0, 1.0])
# Half the draws stay close to the contract (its keys, values near the limits) so both sides are well covered.
affects = st.dictionaries(keys, values, max_size=5) | st.fixed_dictionaries(
    {}, optional={"valence": near, "arousal": near, "dominance": near, "intensity": near})


def engine_accepts(affect: dict[str, Any]) -> bool:
    try:
        affect_push(affect)
    except InputError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(affect=affects)
def test_engine_accepts_exactly_the_schema_valid_affects(affect: dict[str, Any]) -> None:
    assert engine_accepts(affect) == VALIDATOR.is_valid(affect), affect


@pytest.mark.parametrize("affect", [{"valence": -0.8}, {"arousal": 1, "dominance": -1},
                                    {"valence": 0.5, "intensity": 0.2}])
def test_examples_of_the_contract_are_accepted(affect: dict[str, Any]) -> None:
    assert VALIDATOR.is_valid(affect) and engine_accepts(affect)


def test_intensity_scales_the_push() -> None:
    assert affect_push({"valence": -0.8, "arousal": 0.4, "intensity": 0.5}) == pytest.approx((-0.4, 0.2, 0.0))


def test_the_engine_error_names_the_accepted_keys() -> None:
    with pytest.raises(InputError, match="valence, arousal, dominance, intensity"):
        affect_push({"v": -0.8})


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[ApiHarness]:
    harness = await ApiHarness(tmp_path, embedder=embedder()).start()
    yield harness
    await harness.stop()


async def test_over_http_valid_affect_is_200_and_invalid_is_400_recording_nothing(api: ApiHarness) -> None:
    status, out = await api.call("POST", "/v1/turns", turn("ok", "嗯", "嗯", affect={"valence": -0.8, "intensity": 1}))
    assert status == 200 and out["created"] is True
    invalid: list[Any] = [{"v": -0.8}, {"valence": 0, "label": "sad"}, {"valence": 1.5}, {}, {"intensity": 0.5},
                          {"valence": True}, "sad"]
    for i, affect in enumerate(invalid):
        status, body = await api.call("POST", "/v1/turns", turn(f"bad{i}", "嗯", "嗯", affect=affect))
        assert status == 400, (affect, body)
    count = await api.db(lambda c: c.execute("SELECT COUNT(*) FROM chat_message").fetchone()[0])
    assert count == 2   # only the valid turn's two messages
