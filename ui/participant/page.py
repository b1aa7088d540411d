"""The participant's page of a study (``/participate?study=CODE``): one stage at a time.

Stages (``conversation.study``, docs/studies.md): consent, pre-survey, lobby, room, post-survey,
exit. The page is minimal: no sidebar, no navigation, no researcher controls (``ui.bootstrap``
draws it alone and refuses any other page to a participant's session).

The token. On arrival with the join link the page calls ``join`` with the link's other
parameters as labels (Prolific's ``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID`` are recognised by
the library; the same ``PROLIFIC_PID`` returns to its seat) and puts the token it gets into the
URL (``&p=...``), so a reload or a copied URL returns to the same place. Every later call passes
that token: a forged one is refused ("this link is not valid"), and the page never takes a room id
from anywhere, so another room's id in the URL reaches nothing.

Time. The page only reads and posts: the study's clock (groups formed, timeouts, absences, time
limits) runs in the worker and the app's runner. At every stage but the exit the page says
"still here" (the heartbeat) every ``heartbeat_seconds`` of the study's definition: the lobby and
the room from their polling fragments, the consent and the surveys from a fragment of their own,
so a person reading the consent is not taken for gone. When the stage changes by the clock
(their group formed, their room ended, they were removed) those fragments redraw the page.

Outages. While the database or the app is out of reach the page says so in the study's own
words and comes back by itself (``ui.participant.outage``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import streamlit as st

from conversation.vocabulary import ExitStatus, ParticipantStage
from settings import SETTINGS
from ui.participant.forms import consent_form, survey_form
from ui.participant.outage import connection_watch, guarded, say_outage, unavailable
from ui.participant.room import POLL_SECONDS, live_chat
from ui.widgets import escape_markdown

TOKEN_PARAM = "p"  # the same name as ui.bootstrap.TOKEN_PARAM (kept in step by a test)
SESSION_KEY = "_participant_token"
CODE_KEY = "_participant_study"
#: The heartbeat's period: the study's ``participants.heartbeat_seconds`` (``ParticipantView``),
#: unless this setting overrides it.
HEARTBEAT_OVERRIDE = SETTINGS.participant_heartbeat_seconds
HEARTBEAT_KEY = "_participant_heartbeat_s"
NOT_VALID = (
    "This link is not valid. Open the study link you were given again, or contact the researcher."
)


def _study():  # type: ignore[no-untyped-def]
    from conversation import study

    return study


def _labels() -> dict[str, str]:
    """The link's parameters besides the study code and the token: the participant's labels."""
    return {
        key: str(st.query_params.get(key))
        for key in st.query_params
        if key not in ("study", TOKEN_PARAM)
    }


def _refuse(text: str) -> None:
    st.title("Study")
    st.text(text)
    st.stop()


def _token(db: Any) -> str:
    """The participant's token: from the URL or the session, else a new one from ``join``."""
    study = _study()
    token = st.query_params.get(TOKEN_PARAM) or st.session_state.get(SESSION_KEY)
    code = st.query_params.get("study") or st.session_state.get(CODE_KEY)
    if code:
        st.session_state[CODE_KEY] = str(code)
    if token:
        return str(token)
    if not code:
        _refuse("This link is incomplete: it has no study code. Open the link you were given.")
    try:
        joined = study.join(db, str(code), _labels())
    except study.StudyRefused as refused:
        _refuse(str(getattr(refused, "message", None) or refused))
    except study.NotAParticipant:
        _refuse(NOT_VALID)
    st.session_state[SESSION_KEY] = joined.token
    st.query_params[TOKEN_PARAM] = joined.token
    return joined.token


def _every(slot: str, seconds: float) -> bool:
    """True at most once per ``seconds`` in this session (for ``slot``)."""
    key = f"_participant_last:{slot}"
    now = time.monotonic()
    if now - float(st.session_state.get(key, -1e9)) < seconds:
        return False
    st.session_state[key] = now
    return True


def _heartbeat(db: Any, token: str) -> None:
    """Say "still here", at most every heartbeat period of the study."""
    period = float(HEARTBEAT_OVERRIDE or st.session_state.get(HEARTBEAT_KEY) or 1.0)
    if _every("heartbeat", period):
        _study().heartbeat(db, token)


def _poll(db: Any, token: str) -> Any:
    """The heartbeat (at most at its interval), then the participant's view."""
    _heartbeat(db, token)
    view = _study().participant_view(db, token)
    st.session_state[HEARTBEAT_KEY] = getattr(view, "heartbeat_seconds", None)
    return view


def _current_view(db: Any, token: str, shown: Any) -> Any:
    """The heartbeat (at most at its interval), then ``shown`` if it is still the
    participant's view, else their view read again."""
    study = _study()
    _heartbeat(db, token)
    with contextlib.suppress(study.NotAParticipant):  # the read below says so
        if study.view_is_current(db, token, shown):
            return shown
    return study.participant_view(db, token)


def _still_here(db: Any, token: str, stage: str) -> None:
    """At a stage without a live part (the consent, the surveys): a fragment that says "still
    here" every heartbeat period, and redraws the page when the stage changed by the clock or
    the researcher (an absence exit, a removal)."""
    period = float(HEARTBEAT_OVERRIDE or st.session_state.get(HEARTBEAT_KEY) or 1.0)

    def beat() -> None:
        view = guarded(lambda: _poll(db, token))
        if view is not None and view.stage != stage:
            st.rerun(scope="app")

    st.fragment(beat, run_every=period)()


def _waiting_for_the_database(db: Any, token: str) -> None:
    """The page could not read the participant's view: the study's words, and a fragment that
    redraws the page as soon as the database answers again."""
    say_outage()

    def retry() -> None:
        if guarded(lambda: _poll(db, token)) is not None:
            st.rerun(scope="app")

    st.fragment(retry, run_every=POLL_SECONDS)()


def participant_page(db: Any, *, wake: Callable[[], None] | None = None) -> None:
    """The whole page: the current stage of the participant the token names. ``wake``: tells
    the runner to look for work (after a post)."""
    study = _study()
    if st.query_params.get("room"):
        st.error("A study link cannot open a room: you only see your own conversation.")
    connection_watch()
    token = _token(db)
    try:
        view = _poll(db, token)
    except study.NotAParticipant:
        st.session_state.pop(SESSION_KEY, None)
        _refuse(NOT_VALID)
    except unavailable():
        _waiting_for_the_database(db, token)
        return
    st.session_state[SESSION_KEY] = token
    st.title(escape_markdown(view.study_name))
    st.session_state["_participant_wake"] = wake
    STAGES.get(view.stage, _unknown_stage)(db, token, view)


def _consent(db: Any, token: str, view: Any) -> None:
    study = _study()
    _still_here(db, token, view.stage)
    agreed = consent_form(view.consent or "", key="consent")
    if agreed is None:
        return
    act = study.give_consent if agreed else study.decline
    if guarded(lambda: act(db, token)) is not None:
        st.rerun()


def _survey(db: Any, token: str, view: Any) -> None:
    study = _study()
    _still_here(db, token, view.stage)
    if view.stage == ParticipantStage.POST_SURVEY:
        st.text("The conversation has ended. A few last questions:")
    answers = survey_form(view.questions or [], key=f"survey-{view.stage}")
    if answers is None:
        return
    try:
        study.answer_survey(db, token, answers)
    except study.WrongStage:
        pass  # answered in another tab meanwhile: the next run shows where they are
    except unavailable():
        say_outage()  # the answers stay in the form
        return
    except ValueError as exc:
        st.error(escape_markdown(exc))
        return
    st.rerun()


def _lobby(db: Any, token: str, view: Any) -> None:
    st.text("Thank you. You will be matched with other participants shortly.")
    st.text("Please keep this page open.")

    def wait() -> None:
        now = guarded(lambda: _poll(db, token))
        if now is None:
            return
        if now.stage != ParticipantStage.LOBBY:
            st.rerun(scope="app")
        more = now.waiting_for
        if more:
            st.info(
                f"Waiting for {int(more)} more {'person' if more == 1 else 'people'}…",
                icon=":material/hourglass_top:",
            )
        else:
            st.info("Forming your group…", icon=":material/hourglass_top:")
        if now.lobby_seconds_left is not None:
            st.caption(f"At most {int(max(0, now.lobby_seconds_left))} more seconds.")

    st.fragment(wait, run_every=POLL_SECONDS)()


def _room(db: Any, token: str, view: Any) -> None:
    from ui.participant.chat import chat_box, help_panel

    st.caption(f"You are **{escape_markdown(view.seat or 'a participant')}** in this conversation.")
    if view.instructions:
        with st.expander("Your instructions", expanded=True):
            st.text(view.instructions)
    # The box first: a message sent with this run is posted before the chat is drawn.
    chat_box(db, token, view, wake=st.session_state.get("_participant_wake"))
    live_chat(view, lambda shown: _current_view(db, token, shown), stage=ParticipantStage.ROOM)
    help_panel(db, token, view)


def _exit(db: Any, token: str, view: Any) -> None:
    info = view.exit
    status = getattr(info, "status", None)
    st.text(EXIT_TEXTS.get(ExitStatus(status), "Thank you.") if status else "Thank you.")
    if info is None:
        return
    st.text("Your completion code:")
    st.code(info.code, language=None)
    if info.redirect:
        st.link_button("Continue", info.redirect, type="primary")


def _unknown_stage(db: Any, token: str, view: Any) -> None:
    st.text("Please wait…")


EXIT_TEXTS: dict[ExitStatus, str] = {
    ExitStatus.COMPLETED: "Thank you for taking part: the study is complete.",
    ExitStatus.DECLINED: "You chose not to take part. Thank you for your time.",
    ExitStatus.LOBBY_TIMEOUT: "We could not form a group in time. Thank you for waiting.",
    ExitStatus.DROPPED: "You were away for too long, so your conversation went on without you.",
    ExitStatus.REMOVED: "The researcher ended your participation.",
    ExitStatus.ERROR: "Something went wrong on our side. We are sorry.",
    ExitStatus.ABANDONED: "You were away for too long, so your place was given up.",
    ExitStatus.UNFINISHED: "You were away for too long to finish the last questions. Thank you.",
}
STAGES = {
    ParticipantStage.CONSENT: _consent,
    ParticipantStage.PRE_SURVEY: _survey,
    ParticipantStage.POST_SURVEY: _survey,
    ParticipantStage.LOBBY: _lobby,
    ParticipantStage.ROOM: _room,
    ParticipantStage.EXIT: _exit,
}

__all__ = ["EXIT_TEXTS", "NOT_VALID", "SESSION_KEY", "TOKEN_PARAM", "participant_page"]
