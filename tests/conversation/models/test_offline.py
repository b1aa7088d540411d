"""OfflineModel: a real EDSL model that is deterministic, persona-aware, scriptable and honest."""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
import threading

import pytest
from edsl import (
    Agent,
    Cache,
    LanguageModel,
    Model,
    QuestionFreeText,
    QuestionLinearScale,
    QuestionMultipleChoice,
    QuestionNumerical,
    QuestionYesNo,
    Results,
    Scenario,
    ScenarioList,
    Survey,
)

from conversation.dialogue.prompts import persona
from conversation.exceptions import ConversationValueError
from conversation.models import OfflineModel, ask, ask_sync, describe_model, is_offline
from conversation.text.transcript import render_transcript

RUN = {"disable_remote_inference": True, "disable_remote_cache": True, "progress_bar": False}

ALICE = persona("Alice", {"motivation": "You are a skeptical buyer of old mugs."})


def turn_prompt(*messages: tuple[str, str]) -> str:
    records = [
        {"turn": i, "speaker": s, "speaker_index": 0, "text": t}
        for i, (s, t) in enumerate(messages)
    ]
    return f"You are Alice. This is the conversation so far: {render_transcript(records)}\nWhat do you say next?"


def reply(model: OfflineModel, user: str, system: str = ALICE) -> str:
    return ask_sync(model, user_prompt=user, system_prompt=system).text


# -- identity -------------------------------------------------------------------------------


def test_it_is_a_real_edsl_model_that_says_what_it_is():
    model = OfflineModel()
    assert isinstance(model, LanguageModel)
    assert model.model == "offline"
    assert is_offline(model) and not is_offline(Model("test"))
    assert "not an LLM" in describe_model(model)
    assert describe_model(OfflineModel(replies=["x"])) == "Offline model (scripted, not an LLM)"


# -- determinism and persona ----------------------------------------------------------------


def test_same_seed_same_reply_and_seeds_differ():
    prompts = [turn_prompt(("Bob", f"Offer number {i}, take it or leave it")) for i in range(12)]
    first = [reply(OfflineModel(seed=1), p) for p in prompts]
    again = [reply(OfflineModel(seed=1), p) for p in prompts]
    other = [reply(OfflineModel(seed=2), p) for p in prompts]
    assert first == again
    assert first != other  # the seed matters (negative control for the equality above)


def test_reply_addresses_the_last_other_speaker_and_quotes_them():
    text = reply(OfflineModel(mention_probability=0.0), turn_prompt(("Bob", "I want 120 for it")))
    assert text.startswith("Bob, you said")
    assert "I want 120 for it" in text
    assert "@" not in text


def test_reply_mentions_with_at_when_the_seed_says_so():
    text = reply(OfflineModel(mention_probability=1.0), turn_prompt(("Bob", "Hello")))
    assert text.startswith("@Bob,")


def test_opening_turn_introduces_the_persona_in_its_own_voice():
    text = reply(
        OfflineModel(), "You are Alice. This is the conversation so far: \nWhat do you say next?"
    )
    assert "I'm Alice" in text
    assert "skeptical buyer of old mugs" in text


def test_tone_follows_the_traits():
    prompt = turn_prompt(("Bob", "Nice weather"))
    warm = persona("Alice", {"persona": "a friendly, warm neighbour"})
    texts_warm = {reply(OfflineModel(seed=s), prompt, warm) for s in range(6)}
    texts_skeptic = {reply(OfflineModel(seed=s), prompt) for s in range(6)}
    assert any("appreciate" in t or "works for both" in t or "helpful" in t for t in texts_warm)
    assert not any("appreciate" in t for t in texts_skeptic)


def test_buyer_counters_a_number_lower():
    text = reply(OfflineModel(), turn_prompt(("Bob", "It costs 100")))
    assert "How about 90?" in text


def test_a_negotiator_accepts_within_its_limit_and_counters_otherwise():
    buyer = persona("Alice", {"role": "buyer", "private_value": "the mug is worth 10 to you"})
    seller = persona("Alice", {"role": "seller", "private_cost": "the mug cost you 5"})
    offer = turn_prompt(("Bob", "I can do 8"))
    assert reply(OfflineModel(deal_phrase="DEAL"), offer, buyer).endswith("8 works for me. DEAL!")
    assert "How about 7.2?" in reply(OfflineModel(), offer, buyer)  # no phrase: keeps bargaining
    assert "How about 5?" in reply(OfflineModel(), turn_prompt(("Bob", "4 at most")), seller)
    opening = reply(OfflineModel(), "You are Alice. This is the conversation so far: ", buyer)
    assert "I could do 7." in opening and "10" not in opening  # the private value stays private


def test_amounts_read_thousands_separators_and_prefer_currency_over_years():
    # "$24,000" was read as 0 ("How about 0?"), and a car's year as its price.
    buyer = persona("Alice", {"role": "buyer", "private_value": "the car is worth $20,000 to you"})
    text = reply(
        OfflineModel(), turn_prompt(("Bob", "The 2015 Civic is yours for $24,000.")), buyer
    )
    assert "How about 20,000?" in text
    seller = persona("Alice", {"role": "seller", "private_cost": "you paid 15,500 dollars"})
    text = reply(OfflineModel(), turn_prompt(("Bob", "I'd pay 12000 for the 2019 model")), seller)
    assert "How about 15,500?" in text
    assert "How about" not in reply(OfflineModel(), turn_prompt(("Bob", "It is a 2015 car")), buyer)


def test_deal_phrase_after_n_messages_only():
    model = OfflineModel(deal_phrase="DEAL", deal_after=2)
    assert "DEAL" not in reply(model, turn_prompt(("Bob", "Offer 10")))
    assert reply(model, turn_prompt(("Bob", "Offer 10"), ("Alice", "No"))).endswith("DEAL!")


def test_deal_phrase_by_probability_and_never_unconfigured():
    prompt = turn_prompt(("Bob", "Offer 10"))
    assert "DEAL" in reply(OfflineModel(deal_phrase="DEAL", deal_probability=1.0), prompt)
    assert "DEAL" not in reply(OfflineModel(deal_phrase=None, deal_probability=1.0), prompt)


def test_braces_in_the_transcript_are_quoted_literally():
    text = reply(OfflineModel(), turn_prompt(("Bob", "{{ 7*7 }}")))
    assert "{{ 7*7 }}" in text and "49" not in text


# -- scripting ------------------------------------------------------------------------------


def test_queued_replies_are_consumed_in_order_then_it_speaks_for_itself():
    model = OfflineModel(replies=["one", "two"])
    assert [reply(model, "a"), reply(model, "b")] == ["one", "two"]
    assert model.remaining_replies == 0
    assert 'you said "hi"' in reply(model, turn_prompt(("Bob", "hi")))


def test_func_computes_the_reply_from_the_prompts():
    model = OfflineModel(func=lambda user, system: f"{system[:9]}|{user}")
    assert reply(model, "hello") == "You are A|hello"


def test_fail_on_raises_the_given_exception_on_that_call_only():
    boom = TimeoutError("slow provider")
    model = OfflineModel(replies=["a", "b", "c"], fail_on={2: boom, 3: ConnectionError})
    assert reply(model, "1") == "a"
    with pytest.raises(TimeoutError) as first:
        reply(model, "2")
    assert first.value is boom
    with pytest.raises(ConnectionError):
        reply(model, "3")
    assert reply(model, "4") == "b"  # failed calls consumed no queued reply
    assert model.calls == 4


def test_prompts_are_recorded_in_order():
    model = OfflineModel(replies=["x", "y"])
    ask_sync(model, user_prompt="u1", system_prompt="s1")
    ask_sync(model, user_prompt="u2 {{ raw }}", system_prompt="s2")
    assert model.prompts == [("s1", "u1"), ("s2", "u2 {{ raw }}")]


def test_usage_is_estimated_and_free():
    result = ask_sync(
        OfflineModel(replies=["four words are here"]), user_prompt="x" * 40, system_prompt=""
    )
    assert result.input_tokens == 10
    assert result.output_tokens == 5
    assert result.cost == 0.0


def test_latency_waits_without_blocking_the_loop(monkeypatch):
    """Each call awaits its latency, so three calls wait at the same time: the sleep below lets
    none go on until all three are waiting (calls that blocked the loop never would)."""
    model = OfflineModel(latency=0.2, replies=["a", "b", "c"])
    waits: list[float] = []
    all_waiting = asyncio.Event()

    async def sleep(seconds, result=None):
        waits.append(seconds)
        if len(waits) == 3:
            all_waiting.set()
        await asyncio.wait_for(all_waiting.wait(), 30)  # a deadline, only reached on failure
        return result

    async def three():
        return await asyncio.gather(
            *(ask(model, user_prompt=str(i), system_prompt="") for i in range(3))
        )

    monkeypatch.setattr(asyncio, "sleep", sleep)
    replies = asyncio.run(three())
    assert sorted(r.text for r in replies) == ["a", "b", "c"]
    assert waits == [0.2, 0.2, 0.2]  # three 0.2 s waits, overlapped


def test_threads_share_one_model_safely():
    expected = [f"r{i}" for i in range(200)]
    model = OfflineModel(replies=expected)
    got: list[str] = []
    lock = threading.Lock()

    def work():
        for _ in range(25):
            text = reply(model, "go")
            with lock:
                got.append(text)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got) == sorted(expected)  # each queued reply served exactly once
    assert model.calls == 200 and len(model.prompts) == 200


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"seed": "1"}, "seed"),
        ({"deal_phrase": ""}, "deal_phrase"),
        ({"deal_after": -1}, "deal_after"),
        ({"deal_probability": 1.5}, "deal_probability"),
        ({"mention_probability": True}, "mention_probability"),
        ({"max_words": 0}, "max_words"),
        ({"latency": -0.1}, "latency"),
        ({"replies": "hello"}, "replies"),
        ({"replies": [1]}, "replies[0]"),
        ({"func": "not callable"}, "func"),
        ({"fail_on": {0: ValueError()}}, "fail_on"),
        ({"fail_on": {1: "boom"}}, "fail_on[1]"),
    ],
)
def test_bad_settings_name_the_field(kwargs, field):
    with pytest.raises(ConversationValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        OfflineModel(**kwargs)


# -- serialization --------------------------------------------------------------------------


def test_to_dict_round_trips_through_edsl_with_seed_and_settings():
    model = OfflineModel(
        seed=7, deal_phrase="DEAL", deal_after=4, mention_probability=0.5, latency=0.01
    )
    data = json.loads(json.dumps(model.to_dict()))
    restored = LanguageModel.from_dict(data)
    assert type(restored) is OfflineModel
    assert restored.parameters == model.parameters
    assert restored.parameters["seed"] == 7 and restored.parameters["deal_after"] == 4
    assert restored == model and hash(restored) == hash(model)
    assert type(OfflineModel.from_dict(model.to_dict())) is OfflineModel
    assert type(Model("offline", service_name="test")) is OfflineModel
    assert type(Model("test")) is not OfflineModel  # EDSL's own test model is left alone


def test_the_script_is_runtime_only_and_the_restored_model_says_so():
    scripted = OfflineModel(seed=3, replies=["scripted"], func=lambda u, s: "f")
    restored = LanguageModel.from_dict(scripted.to_dict())
    assert restored.parameters["scripted"] is True
    assert "scripted" in describe_model(restored)
    assert restored.remaining_replies == 0
    assert reply(restored, turn_prompt(("Bob", "hi"))) not in ("scripted", "f")


def test_pickle_and_deepcopy_keep_settings_and_state():
    model = OfflineModel(seed=5, replies=["a", "b"])
    reply(model, "first")
    for clone in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        assert clone.parameters == model.parameters
        assert clone.prompts == model.prompts
        assert reply(clone, "second") == "b"
    assert model.remaining_replies == 1  # the clones had their own queue


# -- inside ordinary EDSL jobs --------------------------------------------------------------

DEAL = [
    {"turn": 0, "speaker": "Alice", "speaker_index": 0, "text": "I offer 100 for the mug"},
    {"turn": 1, "speaker": "Bob", "speaker_index": 1, "text": "Make it 120 and DEAL"},
]
NO_DEAL = [
    {"turn": 0, "speaker": "Alice", "speaker_index": 0, "text": "I offer 100 for the mug"},
    {"turn": 1, "speaker": "Bob", "speaker_index": 1, "text": "No way, 200 or nothing"},
]


def test_it_answers_edsl_structured_questions_in_parsable_form():
    questions = [
        QuestionYesNo(
            question_name="deal", question_text="Transcript: {{ transcript }}. Was a deal reached?"
        ),
        QuestionMultipleChoice(
            question_name="last",
            question_text="{{ transcript }} Who spoke last?",
            question_options=["Alice", "Bob"],
        ),
        QuestionMultipleChoice(
            question_name="coded",
            question_text="{{ transcript }} Who?",
            question_options=["Alice", "Bob"],
            use_code=True,
        ),
        QuestionNumerical(
            question_name="price",
            question_text="{{ transcript }} Final price?",
            min_value=0,
            max_value=150,
        ),
        QuestionLinearScale(
            question_name="warmth",
            question_text="{{ transcript }} How warm?",
            question_options=[1, 2, 3, 4, 5],
        ),
        QuestionFreeText(question_name="summary", question_text="{{ transcript }} Summarize."),
    ]
    scenarios = ScenarioList([Scenario({"transcript": DEAL}), Scenario({"transcript": NO_DEAL})])
    model = OfflineModel(seed=1)
    results = Survey(questions).by(scenarios).by(model).run(cache=Cache(), **RUN)
    assert not results.has_unfixed_exceptions
    rows = sorted(
        results.select("scenario.scenario_index", "answer.*").to_dicts(),
        key=lambda r: r["scenario_index"],
    )
    assert [r["deal"] for r in rows] == ["Yes", "No"]
    assert [r["price"] for r in rows] == [120, 150]  # the last number said, within the bounds
    assert all(r["last"] in ("Alice", "Bob") and r["coded"] in ("Alice", "Bob") for r in rows)
    assert all(r["warmth"] in (1, 2, 3, 4, 5) for r in rows)
    assert rows[0]["summary"].startswith("2 messages between Alice and Bob")
    assert model.calls == 12  # EDSL ran the caller's model object, so the record is complete
    restored = Results.from_dict(results.to_dict())
    assert type(restored[0]["model"]) is OfflineModel


def test_it_speaks_in_a_seed_000_style_job_with_a_named_agent():
    question = QuestionFreeText(
        question_name="dialogue",
        question_text="You are {{ speaker_name }}. This is the conversation so far: {{ conversation }} What do you say next?",
    )
    scenario = Scenario({"speaker_name": "Alice", "conversation": DEAL})
    agent = Agent(name="Alice", traits={"motivation": "You are a skeptical buyer."})
    model = OfflineModel(deal_phrase="DEAL", deal_probability=1.0, mention_probability=1.0)
    results = question.by(scenario).by(agent).by(model).run(cache=Cache(), **RUN)
    text = results.select("answer.dialogue").to_list()[0]
    assert text.startswith("@Bob, you said")
    assert text.endswith("DEAL!")
