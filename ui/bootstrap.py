"""Shared set-up for every screen: page config, navigation, the database, the runner, the sidebar.

Navigation. ``streamlit_app.py`` (served by ``app.py``'s ``st.App``) calls :func:`run_app`, which registers the screens of ``pages/`` with
``st.navigation`` and runs the chosen one. Streamlit has a trap here (docs/design.md, "Pages and st.navigation"): because a
folder named ``pages/`` sits beside ``app.py``, a fresh server starts in the legacy multipage mode,
and the first visitor who arrives by a deep link (``/room?room=7``) gets ``pages/room.py`` run on
its own, without ``app.py``, until some session calls ``st.navigation``. Every page therefore starts
with :func:`page_setup`: when the page was not reached through :func:`run_app` it runs the app
itself (which ends the legacy mode for the whole process) and stops the outer run, so the URL is
served by the app's navigation with its sidebar, runner and page config. ``tests/browser`` proves it on a fresh
server (and AppTest, which resets that mode on every run, exercises the same path).

Database and runner. One :class:`storage.Database` and one in-process runner per server process and
database URL (``st.cache_resource``), started by the server's :func:`lifespan` (or, when the
script is run on its own, by the first page); the runner never calls ``st.*`` and is stopped with
the server, or through ``on_release`` (``st.cache_resource.clear()`` in tests).

Sign-in (``ui.access``). With an ``[auth]`` section in the secrets, :func:`run_app` draws only the
sign-in screen until the visitor signed in with a role: navigation is registered hidden (which
still ends the legacy multipage mode) and no page, sidebar or runner is started.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import uuid
from dataclasses import dataclass

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from settings import SETTINGS
from storage.database import database_url, display_url

log = logging.getLogger(__name__)

APP_TITLE = "Conversation rooms"
RUNNER_CONCURRENCY = SETTINGS.runner_concurrency
RUNNER_POLL_SECONDS = SETTINGS.runner_poll_seconds


@dataclass(frozen=True, slots=True)
class Screen:
    path: str
    title: str
    icon: str
    url_path: str


SCREENS: tuple[Screen, ...] = (
    Screen("pages/home.py", "Home", ":material/home:", "home"),
    Screen("pages/agents.py", "Agents", ":material/groups:", "agents"),
    Screen("pages/room.py", "Room", ":material/forum:", "room"),
    Screen("pages/experiments.py", "Experiments", ":material/science:", "experiments"),
    Screen("pages/results.py", "Results", ":material/monitoring:", "results"),
    Screen("pages/study_monitor.py", "Study monitor", ":material/groups_3:", "study_monitor"),
)
#: The participant's page of a study (``/participate?study=CODE``): never in the navigation,
#: reachable without sign-in, drawn without sidebar; see :func:`run_app`.
PARTICIPANT_SCREEN = Screen("pages/participate.py", "Study", ":material/chat:", "participate")
#: The query parameter of the participant token, which the page adds to its URL once the person
#: joined (a reload or a copied URL returns to the same place).
TOKEN_PARAM = "p"
#: Session key of the participant token once the page has read it: the session stays a
#: participant's (hidden navigation, every other page refused) even if the URL loses it.
PARTICIPANT_SESSION_KEY = "_participant_token"

_run = threading.local()
#: Set when this process has drawn its first page: the warm-up of the other screens waits for it
#: (or a few seconds), so that it does not compete for the interpreter with the first visitor.
_first_page_drawn = threading.Event()
#: Held by the warm-up thread while it imports a module, and by a page run while the warm-up is
#: under way. Two threads importing the same modules in different orders can each hold a module
#: the other needs; Python then breaks the deadlock by handing one of them a partially
#: initialised module ("cannot import name 'Room' from partially initialized module"), which
#: failed a first deep-linked visit. With the lock, imports of the two never interleave.
_IMPORTS = threading.Lock()
_warming_up = threading.Event()  # set while the warm-up thread has modules left to import
WARM_UP_WAIT_SECONDS = 5.0
WARM_UP_AFTER_FIRST_PAGE_SECONDS = 2.0


def _navigation(position: str = "sidebar") -> StreamlitPage:
    pages = [
        st.Page(s.path, title=s.title, icon=s.icon, url_path=s.url_path, default=i == 0)
        for i, s in enumerate(SCREENS)
    ]
    pages.append(_participant_page())  # registered everywhere, never listed
    return st.navigation(pages, position=position)  # type: ignore[arg-type]


def _participant_page() -> StreamlitPage:
    p = PARTICIPANT_SCREEN
    return st.Page(p.path, title=p.title, icon=p.icon, url_path=p.url_path, visibility="hidden")


def _asks_for_participant_page() -> bool:
    """Whether the browser asks for ``/participate`` (before ``st.navigation`` resolves it: the
    navigation's position must be chosen first). Streamlit keeps the request on the run's page
    manager; a Streamlit without it makes this False (the page is then drawn with the sidebar,
    still reachable without sign-in)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    manager = getattr(ctx, "pages_manager", None)
    if manager is None:
        return False
    wanted = _participant_page()
    by_hash = getattr(manager, "intended_page_script_hash", None)
    if by_hash:
        return by_hash == wanted._script_hash  # noqa: SLF001 - the hash Streamlit resolves by
    return getattr(manager, "intended_page_name", None) == PARTICIPANT_SCREEN.url_path


def participant_visit() -> bool:
    """Whether this session is a study participant's: it asks for the participant's page, its URL
    carries a participant token, or it has held one. Such a session is drawn with the
    participant's page only and any other page is refused (:func:`run_app`)."""
    if st.session_state.get(PARTICIPANT_SESSION_KEY) or st.query_params.get(TOKEN_PARAM):
        return True
    return _asks_for_participant_page()


def _is_participant_page(page: StreamlitPage) -> bool:
    return getattr(page, "url_path", None) == PARTICIPANT_SCREEN.url_path


def _participant_app(page: StreamlitPage) -> None:
    """A participant's session: no sidebar, no navigation, no runner controls; any page but
    the participant's is refused (a researcher page reached with a participant's link)."""
    st.set_page_config(
        page_title="Study", page_icon="💬", layout="centered", initial_sidebar_state="collapsed"
    )
    if not _is_participant_page(page):
        st.title("Not available")
        st.text("This page is not part of the study. Go back to your study link to continue.")
        return
    _load_secrets_into_environment()
    ensure_runner()
    _run.via_app = True
    try:
        page.run()
    finally:
        _run.via_app = False
        _first_page_drawn.set()


def _room_screen() -> str:
    return next(s.path for s in SCREENS if s.url_path == "room")


def run_app() -> None:
    """The whole of ``app.py``: config, navigation, runner, shared sidebar, then the chosen page
    (or, when sign-in is configured and the visitor has not signed in, the sign-in screen only)."""
    from ui import access

    if participant_visit():
        # Before sign-in: a participant never signs in, and never sees the researcher's pages.
        _participant_app(_navigation(position="hidden"))
        return
    if not access.admitted():
        st.set_page_config(page_title=APP_TITLE, page_icon="💬", layout="centered")
        _navigation(position="hidden")  # ends the legacy multipage mode; no page runs
        access.sign_in_screen(APP_TITLE)
        return
    page = _navigation()
    # getattr: outside a Streamlit run (a process re-running this script bare, as
    # multiprocessing's spawn does with the main script) the page has no title at all.
    if getattr(page, "title", None) == SCREENS[0].title and st.query_params.get("room"):
        # ``/?room=ID`` (a link written without the page's path) means the Room page.
        st.switch_page(_room_screen(), query_params={"room": st.query_params["room"]})
    with _IMPORTS if _warming_up.is_set() else contextlib.nullcontext():
        _shared_setup()
        _run.via_app = True
        try:
            page.run()
        finally:
            _run.via_app = False
            _first_page_drawn.set()


def page_setup() -> None:
    """First line of every page: make sure the page runs inside the app (see the module doc).

    Reached through :func:`run_app` this does nothing. Run on its own by Streamlit's legacy
    multipage mode, it runs the app instead (navigation, which ends that mode for the whole
    process, shared set-up, then this same page, chosen by the URL) and stops the outer run. The
    page is then drawn exactly as it is through ``app.py``, widget identities included, so a
    click that caused this run is not lost.
    """
    if getattr(_run, "via_app", False):
        return
    run_app()
    st.stop()


def _shared_setup() -> None:
    st.set_page_config(page_title=APP_TITLE, page_icon="💬", layout="wide")
    _load_secrets_into_environment()
    ensure_runner()
    _sidebar()


# --- database and runner -------------------------------------------------------------------------


def current_url() -> str:
    """The database URL this server uses (``ROOMS_DATABASE_URL`` or the data folder's file)."""
    return database_url()


@st.cache_resource(show_spinner=False, on_release=lambda db: db.dispose())
def _database(url: str):  # type: ignore[no-untyped-def]
    from storage import Database

    return Database(url)


def database():  # type: ignore[no-untyped-def]
    """The process's :class:`storage.Database` for the configured URL (opened once, migrated)."""
    return _database(current_url())


def _stop_runner(runner) -> None:  # type: ignore[no-untyped-def]
    try:
        runner.stop()
    except Exception:  # a runner that failed to stop must not break cache clearing
        log.exception("stopping the in-process runner failed")


@st.cache_resource(show_spinner=False, on_release=_stop_runner)
def _runner(url: str):  # type: ignore[no-untyped-def]
    from conversation.worker import BackgroundWorker

    runner = BackgroundWorker(
        _database(url), concurrency=RUNNER_CONCURRENCY, poll_interval=RUNNER_POLL_SECONDS
    ).start()
    # On SIGTERM Streamlit stops its server and the process exits normally: release the rooms'
    # leases then, so a restarted server (or a worker) takes them over at once, not after the
    # lease timeout.
    atexit.register(_stop_runner, runner)
    return runner


@contextlib.asynccontextmanager
async def lifespan(app):  # type: ignore[no-untyped-def]
    """The server's start and stop (``st.App`` in ``app.py``): the database is opened (and
    migrated) and the runner started before the first visitor, and stopped with the server. A
    database that cannot be opened does not stop the server: the pages say what is wrong."""
    import anyio

    runner = await anyio.to_thread.run_sync(_start_with_server)
    try:
        yield
    finally:
        if runner is not None:
            await anyio.to_thread.run_sync(_stop_runner, runner)


#: What the screens import on their first run (seconds of imports: EDSL, pandas, plotly, the page
#: helpers); the server imports them as it starts, so its first visitor does not wait for them:
#: Home's before it answers (a fresh server is opened on Home), the other screens' in the
#: background after that.
#: ``streamlit.emojis`` is the catalogue ``st.set_page_config`` reads to check the page icon (a
#: third of a second, once per process). ``ROOMS_APP_WARMUP=0`` turns this off.
HOME_WARM_UP_MODULES = (
    "streamlit.emojis",
    "pandas",
    "storage.research.frames",
    "conversation",
    "ui.access",
    "ui.widgets",
    "ui.room.templates",
    "ui.room.rooms",
    "ui.manage",
)
WARM_UP_MODULES = HOME_WARM_UP_MODULES + (
    "plotly.graph_objects",
    "ui.results.tables",
    "ui.results.charts",
    "ui.results.condition_charts",
    "ui.room.live",
    "conversation.library.agents_file",
    "ui.room.forms",
    "scipy.special",  # the Statistics tab's t intervals (conversation.analysis.statistics)
    "scipy.stats",  # its bootstrap intervals
    "statsmodels.stats.proportion",
)


def _import_quietly(names: tuple[str, ...]) -> None:
    import importlib

    for name in names:
        with _IMPORTS:  # never while a page runs (see _IMPORTS)
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the page that needs it reports the error itself
                log.debug("warm-up import of %s failed", name, exc_info=True)


def _warm_up_home() -> None:
    """Home's imports and the first model description (the sidebar and Home describe the
    default model on every run; the first description imports EDSL's key management), done
    before the server answers: a fresh server's first page then runs in a tenth of a second."""
    import time

    started = time.perf_counter()
    _import_quietly(HOME_WARM_UP_MODULES)
    with _IMPORTS, contextlib.suppress(Exception):
        model_summary()
    log.info("Home warmed up in %.1f s", time.perf_counter() - started)


def _warm_up_pages() -> None:
    """The other screens' imports, in the background: they wait for the first visitor's page
    (a person who opens the app as soon as it answers) or a few seconds, then a little more
    while the browser fetches that page's widget code from this process."""
    import time

    try:
        if _first_page_drawn.wait(WARM_UP_WAIT_SECONDS):
            time.sleep(WARM_UP_AFTER_FIRST_PAGE_SECONDS)
        started = time.perf_counter()
        _import_quietly(WARM_UP_MODULES)
        log.info("pages warmed up in %.1f s", time.perf_counter() - started)
    finally:
        _warming_up.clear()


def _skip_repl_check() -> None:
    """Spare the first visitor Streamlit's one-off "not run with ``streamlit run``" check.

    The first element a process draws makes Streamlit ask whether it runs in a Python REPL
    (``inspect.stack()``, which resolves the source file of every imported module: about a second
    once EDSL and pandas are imported) to print a hint to the terminal. Under the server the
    answer is always no and nothing is printed (a runtime exists), so the server marks that check
    done when it starts. Nothing else changes (a Streamlit without the flag ignores it).
    """
    from streamlit import delta_generator

    if hasattr(delta_generator, "_use_warning_has_been_displayed"):
        delta_generator._use_warning_has_been_displayed = True  # noqa: SLF001


def _start_with_server():  # type: ignore[no-untyped-def]
    _skip_repl_check()
    _load_secrets_into_environment()
    try:
        runner = ensure_runner()
    except Exception:  # noqa: BLE001 - reported by the first page, which opens it again
        log.exception("the runner could not start with the server")
        runner = None
    if SETTINGS.app_warmup:
        _warm_up_home()  # before the server answers (see _warm_up_home)
        # The rest after the runner and Home (whose imports would otherwise race with it, see
        # _IMPORTS): a visitor arriving meanwhile waits for the module being imported, then
        # runs alone.
        _warming_up.set()
        threading.Thread(target=_warm_up_pages, name="rooms-warm-up", daemon=True).start()
    return runner


def ensure_runner():  # type: ignore[no-untyped-def]
    """Start (once per process and URL) the runner that drives this database's rooms.

    ``ROOMS_APP_RUNNER=0`` leaves rooms to separate workers (``python -m conversation.worker``).
    """
    if not SETTINGS.app_runner:
        return None
    return _runner(current_url())


def wake_runner() -> None:
    """Tell the runner to look for work now (after a post, a resume or an approval)."""
    runner = ensure_runner()
    if runner is not None:
        runner.wake()


# --- models and secrets --------------------------------------------------------------------------


def _load_secrets_into_environment() -> None:
    """Provider keys may come from ``.streamlit/secrets.toml``: Streamlit exports its root-level
    entries to the environment, where the model layer reads them. They are never stored."""
    with contextlib.suppress(FileNotFoundError, st.errors.StreamlitSecretNotFoundError):
        _ = len(st.secrets)  # the first access parses the file and exports root-level keys


def model_summary() -> tuple[str, bool, list[str]]:
    """(label of the default model, whether it is the offline stand-in, providers with keys)."""
    from conversation.models import available_providers, describe_model, is_offline

    model = model_choice().model
    return describe_model(model), is_offline(model), list(available_providers())


def model_choice():  # type: ignore[no-untyped-def]
    """The default model with the setting that chose it and what is missing
    (``conversation.models.default_choice.DefaultChoice``)."""
    from conversation.models.default_choice import choose_default

    return choose_default()


def other_providers(choice) -> list[str]:  # type: ignore[no-untyped-def]
    """Configured providers other than the one answering by default (a room may pick them); a
    server that cannot be used (``choice.missing``) is not listed as if it could."""
    from conversation.models import available_providers

    return [
        provider
        for provider in available_providers()
        if provider != choice.provider
        and not (provider == "openai_compatible" and choice.missing and choice.provider is None)
    ]


# --- the shared sidebar --------------------------------------------------------------------------


def _sidebar() -> None:
    from ui.access import default_name, identity_sidebar
    from ui.widgets import escape_markdown

    with st.sidebar:
        identity_sidebar()
        from conversation.models import describe_model, is_offline

        choice = model_choice()
        label = escape_markdown(describe_model(choice.model))
        if is_offline(choice.model):
            st.warning(f"Model: {label}", icon=":material/smart_toy:")
        else:
            st.success(f"Model: {label}", icon=":material/smart_toy:")
        st.caption(escape_markdown(choice.reason))
        if choice.missing:
            st.caption("Missing: " + escape_markdown(choice.missing))
        others = other_providers(choice)
        if others:
            st.caption(
                "Also configured (a room may pick them): " + escape_markdown(", ".join(others))
            )
        st.session_state.setdefault("human_name", default_name())
        st.text_input(
            "Your name in rooms",
            key="human_name",
            help="Messages you post are signed with this name (not an agent's name).",
        )
        # As text: a URL in Markdown needs an invisible joiner to stay unlinked, which a person
        # copying it would paste along.
        st.text(f"Database: {display_url(current_url())}")


def human_name() -> str:
    """The name the person signs messages with (sidebar), default ``user``."""
    from ui.access import typed_name

    return typed_name()


def actor():  # type: ignore[no-untyped-def]
    """The person using the app (``ui.access.current_actor``): pass it to every engine call."""
    from ui.access import current_actor

    return current_actor()


def request_id(slot: str) -> str:
    """The request id of the form drawn in ``slot``; created when first drawn, kept until used.

    Sending the same id twice is one message (the Room API is idempotent per request id), so a
    double click, or a rerun that repeats a submission, never posts twice.
    """
    key = f"_request_id:{slot}"
    if key not in st.session_state:
        st.session_state[key] = f"ui-{uuid.uuid4().hex}"
    return st.session_state[key]


def once(slot: str, make):  # type: ignore[no-untyped-def]
    """Run ``make()`` once per drawn form: a second submit of the same drawing (a double click)
    returns the first result instead of creating a second room or experiment."""
    drawn = request_id(slot)
    done = st.session_state.setdefault("_made_by_request", {})
    if drawn not in done:
        done[drawn] = make()
    spend_request_id(slot)
    return done[drawn]


def spend_request_id(slot: str) -> None:
    """Forget the slot's request id after a successful send: the next form gets a new one."""
    st.session_state.pop(f"_request_id:{slot}", None)
