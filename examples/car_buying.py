"""Three agents at a car dealership: a buyer, a salesman and a skeptical brother-in-law.

Runs several variations of the scene in parallel with ``ConversationList``. Offline by default (the
offline model, no key needed); with a provider key in the environment the default model is a real
one. Run: ``python -m examples.car_buying``. Importing this module runs nothing.
"""

from __future__ import annotations

from edsl import Agent, AgentList

from conversation import Conversation, ConversationList
from conversation.models import default_model, describe_model

BUDGETS = (18_000, 25_000, 32_000)


def build(budget: int, index: int) -> Conversation:
    agents = AgentList(
        [
            Agent(
                name="Buyer",
                traits={
                    "role": "first-time car buyer",
                    "budget": f"${budget:,}",
                    "goal": "buy a reliable used sedan without overpaying",
                },
            ),
            Agent(
                name="Salesman",
                traits={
                    "role": "car salesman on commission",
                    "goal": "sell the 2021 sedan on the lot, listed at $27,500",
                },
            ),
            Agent(
                name="Brother_in_law",
                traits={
                    "role": "the buyer's skeptical brother-in-law",
                    "goal": "make sure nobody gets ripped off; question every claim",
                },
            ),
        ]
    )
    return Conversation(
        agent_list=agents,
        max_turns=9,
        per_round_message_template=(
            "Turn {{ current_turn }} of {{ max_turns }}."
            "{% if max_turns - current_turn <= 3 %} Start wrapping up.{% endif %}"
        ),
        conversation_index=index,
        default_model=default_model(),
    )


def main() -> None:
    conversations = ConversationList([build(b, i) for i, b in enumerate(BUDGETS)])
    print(f"Model: {describe_model(conversations[0].model_for(conversations[0].agent_list[0]))}")
    conversations.run(max_workers=len(BUDGETS))
    for budget, c in zip(BUDGETS, conversations, strict=True):
        print(f"\n=== budget ${budget:,} ({c.stop_reason}) ===")
        for record in c.transcript:
            print(f"{record['speaker']}: {record['text']}")


if __name__ == "__main__":
    main()
