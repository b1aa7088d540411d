"""A reply's cost: US dollars from EDSL's price table when it lists the model; None when it does
not (EDSL would price it at a fallback rate) and for self-hosted servers; 0.0 for the offline
model and for a reply served from the cache."""

from __future__ import annotations

import asyncio

import pytest
from edsl import Model
from edsl.caching import Cache
from edsl.language_models.language_model import LanguageModel

from conversation.models import OfflineModel, ask, resolve_model
from tests.support import keep_prices_offline, known_prices
from tests.support.openai_server import OpenAICompatibleServer


class PricedModel(OfflineModel):
    """The offline model, priced as a hosted service is (by EDSL's price table)."""

    _inference_service_ = "openai"

    def cost(self, raw_response):  # type: ignore[no-untyped-def]
        return LanguageModel.cost(self, raw_response)


def reply(model, cache=None):  # type: ignore[no-untyped-def]
    return asyncio.run(
        ask(model, user_prompt="What is your offer?", system_prompt="You are Bob.", cache=cache)
    )


def test_a_listed_model_costs_its_price(monkeypatch: pytest.MonkeyPatch) -> None:
    model = PricedModel()
    known_prices(monkeypatch, {("openai", model.model): (2.0, 8.0)})
    answer = reply(model)
    assert answer.input_tokens and answer.output_tokens
    expected = (answer.input_tokens * 2.0 + answer.output_tokens * 8.0) / 1_000_000
    assert answer.cost == pytest.approx(expected)


def test_a_model_missing_from_the_table_has_no_cost_not_a_fallback_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    known_prices(monkeypatch, {("openai", "some-other-model"): (2.0, 8.0)})
    answer = reply(PricedModel())
    assert answer.cost is None
    assert answer.input_tokens  # the tokens are still counted


def test_the_offline_and_edsl_test_models_cost_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    keep_prices_offline(monkeypatch)
    assert reply(OfflineModel()).cost == 0.0
    assert reply(Model("test", canned_response="Ten dollars.")).cost == 0.0


def test_a_self_hosted_server_has_no_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    known_prices(monkeypatch, {("openai_compatible", "tiny"): (2.0, 8.0)})
    with OpenAICompatibleServer() as server:
        model = resolve_model(
            {"service": "openai_compatible", "model": "tiny", "base_url": server.base_url}
        )
        assert reply(model).cost is None


def test_a_reply_from_the_cache_costs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    model = PricedModel()
    known_prices(monkeypatch, {("openai", model.model): (2.0, 8.0)})
    cache = Cache(data={})
    first, second = reply(model, cache), reply(model, cache)
    assert first.cost and first.cost > 0 and not first.cache_used
    assert second.cache_used and second.cost == 0.0
    # Nothing was sent, so nothing is charged: no tokens either (budgets count none of it).
    assert (second.input_tokens, second.output_tokens) == (0, 0) < (first.input_tokens, 1)
