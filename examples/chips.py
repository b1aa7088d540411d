"""Chip trading between agents that keep internal state: a custom EDSL ``Agent`` subclass.

Each ``ChipTrader`` holds chips of several colours and values them privately. Traders propose
trades (``OFFER: give 1 red for 1 blue``) and accept them (``ACCEPT``). After every statement the
example settles accepted trades, and each trader's traits are updated to show its current chips,
so the next prompt reflects the new state. ``Conversation`` reads traits afresh each turn and never
modifies the agents itself.

Offline by default, a scripted trading policy plays through the offline model (``OfflineModel(func=...)``);
with a provider key set, a real model trades. Run: ``python -m examples.chips``.
Importing this module runs nothing.
"""

from __future__ import annotations

import re
from typing import Any

from edsl import Agent, AgentList

from conversation import AgentStatement, Conversation
from conversation.models import OfflineModel, available_providers, default_model, describe_model

OFFER = re.compile(r"OFFER:\s*give\s+(\d+)\s+(\w+)\s+for\s+(\d+)\s+(\w+)", re.IGNORECASE)


class ChipTrader(Agent):
    """An agent with chips and private values; its traits always show its current holdings."""

    def __init__(self, name: str, chips: dict[str, int], values: dict[str, int]) -> None:
        super().__init__(name=name, traits={})
        self.chips = dict(chips)
        self.values = dict(values)
        self._show()

    def _show(self) -> None:
        self.traits = {
            "chips": dict(self.chips),
            "values_per_chip": dict(self.values),
            "goal": "end with the highest total value; trade only when it raises your total",
            "format": "propose with 'OFFER: give <n> <colour> for <n> <colour>' or reply 'ACCEPT'",
        }

    def worth(self) -> int:
        return sum(self.values.get(colour, 0) * n for colour, n in self.chips.items())

    def can_give(self, colour: str, count: int) -> bool:
        return self.chips.get(colour, 0) >= count

    def exchange(self, give: tuple[int, str], get: tuple[int, str]) -> None:
        (n_out, colour_out), (n_in, colour_in) = give, get
        self.chips[colour_out] -= n_out
        self.chips[colour_in] = self.chips.get(colour_in, 0) + n_in
        self._show()


class Market:
    """Settles trades as statements arrive (the conversation's ``on_statement`` callback)."""

    def __init__(self, traders: list[ChipTrader]) -> None:
        self.traders = {t.name: t for t in traders}
        self.open_offer: tuple[str, int, str, int, str] | None = None
        self.trades: list[str] = []

    def __call__(self, statement: AgentStatement) -> None:
        text = statement.text
        if "ACCEPT" in text.upper() and self.open_offer and self.open_offer[0] != statement.speaker:
            offerer, n_out, c_out, n_in, c_in = self.open_offer
            seller, buyer = self.traders[offerer], self.traders[statement.speaker]
            if seller.can_give(c_out, n_out) and buyer.can_give(c_in, n_in):
                seller.exchange((n_out, c_out), (n_in, c_in))
                buyer.exchange((n_in, c_in), (n_out, c_out))
                self.trades.append(
                    f"{offerer} gave {n_out} {c_out} to {statement.speaker} for {n_in} {c_in}"
                )
            self.open_offer = None
            return
        match = OFFER.search(text)
        if match:
            self.open_offer = (
                statement.speaker,
                int(match[1]),
                match[2].lower(),
                int(match[3]),
                match[4].lower(),
            )


def scripted_policy(traders: dict[str, ChipTrader], market: Market) -> Any:
    """An offline trading policy: accept offers that raise my total, else offer my cheapest chip
    for the other side's chip I value most."""

    def reply(user_prompt: str, system_prompt: str) -> str:
        me = traders[system_prompt.split(".")[0].removeprefix("You are ")]
        offer = market.open_offer
        if offer and offer[0] != me.name:
            _, n_out, c_out, n_in, c_in = offer
            gain = me.values.get(c_out, 0) * n_out - me.values.get(c_in, 0) * n_in
            if gain > 0 and me.can_give(c_in, n_in):
                return f"ACCEPT. That gives me {gain} more points."
        other = next(t for t in traders.values() if t is not me)
        mine = sorted((c for c in me.chips if me.chips[c] > 0), key=lambda c: me.values.get(c, 0))
        wanted = sorted(other.chips, key=lambda c: -me.values.get(c, 0))
        if not mine or not wanted or mine[0] == wanted[0]:
            return "I am happy with my chips. No offer from me."
        return f"OFFER: give 1 {mine[0]} for 1 {wanted[0]}. @{other.name}, what do you say?"

    return reply


def main() -> None:
    traders = [
        ChipTrader("Ana", chips={"red": 3, "blue": 1}, values={"red": 1, "blue": 4, "green": 2}),
        ChipTrader("Ben", chips={"blue": 2, "green": 2}, values={"red": 3, "blue": 1, "green": 2}),
    ]
    market = Market(traders)
    by_name = {t.name: t for t in traders}
    offline = not available_providers()
    model = OfflineModel(func=scripted_policy(by_name, market)) if offline else default_model()
    c = Conversation(agent_list=AgentList(traders), max_turns=8, default_model=model)
    c.on_statement = market
    print(f"Model: {describe_model(model)}")
    print("Start: " + ", ".join(f"{t.name} {t.chips} worth {t.worth()}" for t in traders))
    c.converse()
    for record in c.transcript:
        print(f"{record['speaker']}: {record['text']}")
    print("Trades: " + ("; ".join(market.trades) or "none"))
    print("End:   " + ", ".join(f"{t.name} {t.chips} worth {t.worth()}" for t in traders))


if __name__ == "__main__":
    main()
