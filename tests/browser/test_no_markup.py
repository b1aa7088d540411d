"""Nothing a person or a model wrote is drawn as Markdown or HTML, in a real browser.

A local HTTP server (stdlib, 127.0.0.1, a random port) counts every request it gets. Rooms,
agents, traits, messages, model replies, stop reasons, experiment names and conditions, and
analysis answers are stored with text holding a Markdown image, a Markdown link and a raw ``<img>``
pointing at that server; the test visits every page (and their tabs) and the counter must stay at
zero: no image fetched, no link drawn. The same text must be visible literally. Plus: links with
bad ids give a message and no traceback in the server's log, a message over the limit is refused
next to the chat box and stays in it, and switching rooms never shows a second room picker.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
import urllib.parse
from collections import Counter
from collections.abc import Iterator

import pytest

import storage
from conversation.rooms import manage
from conversation.rooms.room import MAX_MESSAGE_CHARS, Room
from tests.browser.browser_helpers import choose, idle, open_page, post, until, wait_text
from ui import experiments as ex
from ui.results.static_table import selector as static_table_selector
from ui.results.tables import ROOMS_TABLE_KEY
from ui.room import rooms
from ui.room.templates import MUG_NEGOTIATION

pytestmark = pytest.mark.browser


class _Counter(http.server.BaseHTTPRequestHandler):
    hits: Counter[str] = Counter()

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        type(self).hits[self.path] += 1
        self.send_response(404)
        self.end_headers()

    do_POST = do_HEAD = do_GET  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def trap() -> Iterator[tuple[int, Counter[str]]]:
    """(port, requests by path) of a local server nothing on the pages may make the browser ask."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], _Counter.hits
    server.shutdown()
    server.server_close()


def hostile(port: int, tag: str) -> str:
    base = f"http://127.0.0.1:{port}"
    return f"{tag} ![x]({base}/{tag}-img.png) [link]({base}/{tag}-l) <img src={base}/{tag}-h.png>"


def _seed(db, port: int) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Rooms, agents, an experiment and an analysis, every text field hostile."""
    text = {k: hostile(port, k) for k in ("room", "trait", "said", "reply", "reason", "exp",
                                          "cond", "answer", "question", "instr")}  # fmt: skip
    agent_id = storage.create_agent_profile(
        db,
        f"![a](http://127.0.0.1:{port}/agent.png)",
        traits={"role": text["trait"]},
        instruction=text["instr"],
    )
    agents = [{"name": "Buyer", "traits": {"role": text["trait"]}},
              {"name": "Seller", "traits": {"role": "seller"}}]  # fmt: skip
    saved = [{"speaker": "user", "content": text["said"]},
             {"speaker": "Buyer", "content": text["reply"]}]  # fmt: skip
    room = Room.import_messages(db, json.dumps(saved), agents=agents, name=text["room"])
    room.pause()
    room.stop(reason=text["reason"])
    template = ex.template_from_room_template(MUG_NEGOTIATION)
    # Experiment rooms are named "<experiment> <condition>" (at most 200 characters).
    text["cond"] = f"<img src=http://127.0.0.1:{port}/c.png>"
    config = ex.design(template, [ex.Condition(text["cond"], {})], 1)
    experiment_id = storage.create_experiment(db, text["exp"], config, status="done")
    ex.materialize(db, experiment_id)
    (member,) = storage.list_rooms(db, experiment_id=experiment_id)
    # Charted (termination reasons): Plotly reads <a href>, <b> and <br> in labels.
    text["charted"] = f'<a href="http://127.0.0.1:{port}/plotly">p</a><b>b</b>'

    Room.open(db, member.id).stop(reason=text["charted"])
    analysis = storage.create_analysis(
        db, text["question"], {"type": "free_text", "name": "answer", "text": text["question"]},
        experiment_id=experiment_id, status="done",
    )  # fmt: skip
    storage.record_answer(db, analysis, member.id, text["answer"])
    return {"room": room.id, "experiment": experiment_id, "text": text, "agent": agent_id}


def wait_literal(page, text: str) -> None:  # type: ignore[no-untyped-def]
    """Wait until ``text`` is visible as written (the app puts invisible word joiners into
    ``://``, ``www.`` and ``@`` so that Markdown does not turn them into links)."""
    page.wait_for_function(
        "t => document.body.innerText.replaceAll('\\u2060', '').includes(t)",
        arg=text,
        timeout=20_000,
        polling=100,
    )


def _no_markup_elements(page, port: int) -> None:  # type: ignore[no-untyped-def]
    for selector in (f"img[src*='127.0.0.1:{port}']", f"a[*|href*='127.0.0.1:{port}']"):
        where = page.evaluate(
            """s => [...document.querySelectorAll(s)].map(e =>
                 (e.closest('[data-testid]')?.dataset.testid || '?') + ': ' + e.outerHTML)""",
            selector,
        )
        assert where == [], where


def _tabs(page, names: list[str]) -> None:  # type: ignore[no-untyped-def]
    for name in names:
        page.get_by_role("tab", name=name).click()
        page.wait_for_timeout(400)


@pytest.fixture
def seeded(db, trap) -> Iterator[dict[str, object]]:  # type: ignore[no-untyped-def]
    made = _seed(db, trap[0])
    yield made
    # The server is shared: leave its agent library as other tests expect it (rooms are told
    # apart by name).
    storage.delete_agent_profile(db, int(made["agent"]))  # type: ignore[call-overload]


def test_no_page_draws_user_or_model_text_as_markup(app_server, page, trap, seeded) -> None:  # type: ignore[no-untyped-def]
    port, hits = trap
    text = seeded["text"]
    assert isinstance(text, dict)
    hits.clear()

    open_page(page, app_server, "/")
    page.get_by_test_id("stDataFrame").first.wait_for()  # names in cells: drawn on a canvas
    idle(page)

    open_page(page, app_server, "/agents")
    choose(page, "Agent", f"![a](http://127.0.0.1:{port}/agent.png)")
    wait_literal(page, f"Edit ![a](http://127.0.0.1:{port}/agent.png)")
    idle(page)

    open_page(page, app_server, f"/room?room={seeded['room']}")
    wait_literal(page, text["room"])  # the title, literally
    wait_literal(page, text["said"])
    wait_literal(page, text["reply"])
    wait_literal(page, f"Stopped: {text['reason']}")
    _tabs(page, ["Settings", "Fork & export", "Turn details"])
    idle(page)
    _no_markup_elements(page, port)

    open_page(page, app_server, "/experiments?experiment=" + str(seeded["experiment"]))
    wait_literal(page, text["exp"])
    wait_text(page, "Select a row to open the room")
    idle(page)
    open_page(page, app_server, "/experiments")
    page.get_by_text("An existing room", exact=True).click()
    idle(page)

    open_page(page, app_server, "/results?experiment=" + str(seeded["experiment"]))
    page.locator(
        static_table_selector(ROOMS_TABLE_KEY)
    ).wait_for()  # the first view: a static table
    # Results' tabs are lazy: each one's content exists only while it is open.
    for name in ("Transcript", "Compare", "Analysis", "Statistics", "Judges", "Coding", "Export"):
        _tabs(page, [name])
        if name == "Analysis":
            page.get_by_test_id("stPlotlyChart").first.wait_for(state="attached")  # its answers
        idle(page)
        _no_markup_elements(page, port)
    _tabs(page, ["Charts"])
    page.get_by_test_id("stPlotlyChart").nth(5).wait_for()  # outcomes by condition
    idle(page)
    _no_markup_elements(page, port)
    open_page(page, app_server, "/results")
    _tabs(page, ["Charts"])
    page.get_by_test_id("stPlotlyChart").first.wait_for()
    idle(page)

    # A query parameter carrying markup is never quoted back.
    quoted = urllib.parse.quote(text["room"])
    open_page(page, app_server, f"/room?room={quoted}")
    wait_text(page, "The link's room id is not a whole positive number")
    open_page(page, app_server, f"/results?experiment={quoted}")
    wait_text(page, "The link's experiment id is not a whole positive number")
    idle(page)
    page.wait_for_timeout(1000)  # late image loads would land here
    _no_markup_elements(page, port)
    assert dict(hits) == {}
    assert page.dialogs == []


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/room?room=abc", "The link's room id is not a whole positive number"),
        ("/room?room=-1", "The link's room id is not a whole positive number"),
        ("/room?room=0", "The link's room id is out of range"),
        ("/room?room=99999999999999999999999", "The link's room id is out of range"),
        ("/room?room=987654", "There is no room 987654"),
        ("/room?room=", "New room"),
        ("/experiments?experiment=99999999999999999999999", "out of range"),
        ("/experiments?experiment=987654", "There is no experiment 987654"),
        ("/experiments?experiment=x1", "not a whole positive number"),
        ("/results?experiment=99999999999999999999999", "out of range"),
        ("/results?experiment=987654", "There is no experiment 987654"),
    ],
)
def test_bad_ids_in_links_give_a_message_and_no_traceback(app_server, page, path, message) -> None:  # type: ignore[no-untyped-def]
    logged = len(app_server.log())
    open_page(page, app_server, path)
    wait_text(page, message)
    idle(page)
    wait_text(page, "Your name in rooms")  # the whole app is drawn, not a blank page
    tail = app_server.log()[logged:]
    assert "Traceback" not in tail and "Error" not in tail, tail


def test_a_long_message_is_refused_next_to_the_box_and_stays_in_it(app_server, db, page) -> None:  # type: ignore[no-untyped-def]
    room = rooms.create_room(db, rooms.draft_from_template(MUG_NEGOTIATION), opening="Hello")
    until(lambda: room.status in ("terminated", "settled"))
    open_page(page, app_server, f"/room?room={room.id}")
    wait_text(page, MUG_NEGOTIATION.title)
    held = len(room.events())
    pasted = "y" * 100_000
    post(page, pasted)
    # A 100 KB paste takes the browser a while to send and redraw on a loaded machine.
    wait_text(page, f"a message is limited to {MAX_MESSAGE_CHARS:,} characters", timeout=60_000)
    idle(page)
    box = page.get_by_test_id("stChatInputTextArea")
    assert len(box.input_value()) == len(pasted)  # the text is still in the box
    refusal = page.get_by_test_id("stAlertContentError").filter(has_text="Not sent")
    near = refusal.bounding_box()["y"] - box.bounding_box()["y"]
    assert -300 < near < 0, near  # right above the box, not at the top of a long page
    assert len(room.events()) == held
    # The room changes while the refused text waits (in a running room, every turn does that):
    # the page reruns, and neither the text nor the reason may vanish with the redraw.
    manage.rename_room(db, room.id, "Renamed while the text waits")
    wait_text(page, "Renamed while the text waits")
    idle(page)
    assert len(box.input_value()) == len(pasted)
    assert refusal.count() == 1


def test_switching_rooms_shows_one_room_picker_and_no_state_warning(fresh_server, browser) -> None:  # type: ignore[no-untyped-def]
    fresh_server.folder.mkdir(parents=True, exist_ok=True)
    db = fresh_server.database()
    first = rooms.create_room(db, rooms.draft_from_template(MUG_NEGOTIATION, name="First room"))
    second = rooms.create_room(db, rooms.draft_from_template(MUG_NEGOTIATION, name="Second room"))
    db.dispose()
    fresh_server.start()
    page = browser.new_page()
    try:
        open_page(page, fresh_server, f"/room?room={first.id}")
        wait_text(page, "First room")
        idle(page)
        # Record, on every DOM change, how many select boxes labelled "Room" are on the page.
        page.evaluate(
            """() => {
              window.__maxPickers = 0;
              const count = () => [...document.querySelectorAll('[data-testid="stSelectbox"]')]
                .filter(e => (e.querySelector('label')?.innerText || '').trim() === 'Room').length;
              new MutationObserver(() => {
                window.__maxPickers = Math.max(window.__maxPickers, count());
              }).observe(document.body, {subtree: true, childList: true, attributes: true});
            }"""
        )
        for target, title in ((second, "Second room"), (first, "First room")):
            page.get_by_label("Room", exact=True).click()
            page.get_by_role("option", name=re.compile(f"^#{target.id} ")).click()
            page.wait_for_function(
                "t => [...document.querySelectorAll('h1')].some(h => h.innerText.includes(t))",
                arg=title,
            )
            idle(page)
        assert page.evaluate("window.__maxPickers") == 1
        assert "default value but also had its value set" not in fresh_server.log()
    finally:
        page.close()
