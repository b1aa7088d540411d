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
