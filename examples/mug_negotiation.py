"""Bilateral bargaining over a mug, across several (buyer value, seller cost) pairs, then a post-hoc
EDSL analysis of every transcript: was a deal reached, and at what price?

Offline by default: the offline model bargains and says DEAL when it settles, and answers the
follow-up questions from the transcripts. With a provider key set, a real model does both.
Run: ``python -m examples.mug_negotiation``. Importing this module runs nothing.
"""

from __future__ import annotations

from edsl import Agent, AgentList, QuestionFreeText, QuestionYesNo

from conversation import Conversation, ConversationList
from conversation.analysis.questions import analyze
from conversation.models import OfflineModel, default_model, describe_model, is_offline

VALUATION_PAIRS = ((10, 4), (8, 7), (6, 9))  # (buyer's value, seller's cost) in dollars


def stop_on_deal(statements) -> bool:  # type: ignore[no-untyped-def]
    """Stop once someone says DEAL."""
    return bool(statements) and "DEAL" in statements[-1].text.upper()


def negotiation_model(index: int):  # type: ignore[no-untyped-def]
    """A real model when a key is configured; else the offline model, told to say DEAL."""
    model = default_model()
    return OfflineModel(seed=index, deal_phrase="DEAL") if is_offline(model) else model


def build(value: int, cost: int, index: int) -> Conversation:
    agents = AgentList(
        [
            Agent(
                name="Buyer",
                traits={
                    "role": "buyer of a coffee mug",
                    "private_value": f"the mug is worth ${value} to you; never reveal this",
                    "rule": "say DEAL when you accept a price",
                },
            ),
            Agent(
                name="Seller",
                traits={
                    "role": "seller of a coffee mug",
                    "private_cost": f"the mug cost you ${cost}; never reveal this",
                    "rule": "say DEAL when you accept a price",
                },
            ),
        ]
    )
    return Conversation(
        agent_list=agents,
        max_turns=8,
        stopping_function=stop_on_deal,
        conversation_index=index,
        default_model=negotiation_model(index),
    )


def main() -> None:
    conversations = ConversationList(
        [build(value, cost, i) for i, (value, cost) in enumerate(VALUATION_PAIRS)]
    )
    model = conversations[0].model_for(conversations[0].agent_list[0])
    print(f"Model: {describe_model(model)}")
    conversations.run()

    questions = [
        QuestionYesNo(
            question_text="Here is a negotiation transcript:\n{{ transcript }}\nWas a deal reached?",
            question_name="deal_reached",
        ),
        QuestionFreeText(
            question_text="Here is a negotiation transcript:\n{{ transcript }}\n"
            "What was the final price offered by each side?",
            question_name="price_summary",
        ),
    ]
    rows = analyze(questions, conversations.summarize(), model=model)
    for (value, cost), c, row in zip(VALUATION_PAIRS, conversations, rows, strict=True):
        print(
            f"\n=== value ${value}, cost ${cost}: {len(c.transcript)} turns ({c.stop_reason}) ==="
        )
        for record in c.transcript:
            print(f"{record['speaker']}: {record['text']}")
        print(f"-> deal reached: {row['deal_reached']}; prices: {row['price_summary']}")


if __name__ == "__main__":
    main()
