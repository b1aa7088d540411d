"""Test helpers shipped with the suite (a tiny OpenAI-compatible server, hermetic EDSL prices)."""

from __future__ import annotations

import pytest


def keep_prices_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """EDSL downloads a price list from Expected Parrot on a model's first priced call (any model
    but the offline one): mark the prices as loaded, and empty, for the test."""
    from edsl.language_models.price_manager import PriceManager

    manager = PriceManager.get_instance()
    monkeypatch.setattr(manager, "_price_lookup", {})
    monkeypatch.setattr(manager, "_prices_loaded", True)


def known_prices(
    monkeypatch: pytest.MonkeyPatch, prices: dict[tuple[str, str], tuple[float, float]]
) -> None:
    """Give EDSL's price table these ``(service, model): (input, output)`` prices in US dollars
    per million tokens (the shape Expected Parrot's price list has), and nothing else."""
    from edsl.language_models.price_manager import PriceManager

    def entry(per_million: float) -> dict[str, object]:
        return {
            "one_usd_buys": 1_000_000 / per_million if per_million else "infinity",
            "service_stated_token_qty": 1_000_000,
            "service_stated_token_price": per_million,
        }

    table = {key: {"input": entry(i), "output": entry(o)} for key, (i, o) in prices.items()}
    manager = PriceManager.get_instance()
    monkeypatch.setattr(manager, "_price_lookup", table)
    monkeypatch.setattr(manager, "_prices_loaded", True)
