"""Small Streamlit building blocks shared by the pages: safe text, avatars, field errors, model
picker. Message bodies and names are always drawn as plain text (``st.text``) or with their
Markdown escaped; nothing here renders HTML."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

# Material icons render the same everywhere (no emoji font needed); one per roster position.
AGENT_AVATARS = (
    ":material/smart_toy:",
    ":material/psychology:",
    ":material/support_agent:",
    ":material/engineering:",
    ":material/school:",
    ":material/storefront:",
    ":material/pets:",
    ":material/local_florist:",
    ":material/rocket_launch:",
    ":material/palette:",
)
HUMAN_AVATAR = ":material/person:"
SYSTEM_AVATAR = ":material/settings:"
WORD_JOINER = "\u2060"
# What GitHub-flavoured Markdown turns into links by itself: http(s) URLs, www. and e-mail
# addresses. Other schemes (``sqlite:////...``, ``postgresql://...`` without an ``@``) stay as typed.
_AUTOLINK = re.compile(r"(?i:https?):/|(?i:www)\.|[^\s]@")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~<$&=])")


def escape_markdown(text: Any) -> str:
    """``text`` shown literally by any element that renders Markdown (titles, captions, alerts,
    widget labels, radio options, tabs, expanders, metrics, progress text, buttons).

    Checked in Chromium (``tests/browser/test_no_markup.py``): backslash escapes stop images,
    links, emphasis, LaTeX, ``:color[...]`` directives and raw HTML, but Streamlit expands
    ``:material/icon:`` shortcodes before the Markdown parser sees the backslashes, so a colon
    becomes the character reference ``&#58;`` (the ``&`` of the user's own text is escaped).
    GitHub-flavoured Markdown also turns bare ``http://...``, ``www.`` and ``a@b.c`` into links
    after decoding (escapes do not help), so an invisible WORD JOINER (U+2060) goes between
    ``http(s)://``'s colon and slashes, after ``www`` and before ``@``, and nowhere else: it
    travels with copy and paste, so text Markdown would not link (a ``sqlite:////...`` path, a
    title) keeps exactly the characters typed.
    Never use it for select-box or multiselect options, placeholders or dataframe cells: those
    are plain text already and would show the backslashes.
    """
    unlinked = _AUTOLINK.sub(lambda m: m.group(0)[:-1] + WORD_JOINER + m.group(0)[-1], str(text))
    escaped = _MD_SPECIAL.sub(r"\\\1", unlinked).replace(":", "&#58;")
    return escaped.replace("\n", "  \n")


def synced_selectbox(
    label: str,
    options: Sequence[Any],
    value: Any,
    *,
    key: str,
    format_func: Any = str,
    **kwargs: Any,
) -> Any:
    """A select box that shows ``value`` (say, the room of the URL) under one stable ``key``.

    A key that embeds the value (``room-pick-7``) makes a new widget on every switch: the old
    one flashes while the page reruns, and a remembered state of that key meets the ``index``
    default (Streamlit warns). Here the key never changes; when ``value`` changes from outside
    (a link, a page switch) the widget's state is set to it before the widget is drawn, and no
    ``index`` is passed, so it has one source of truth.
    """
    marker = f"_synced:{key}"
    options = list(options)
    if (
        key not in st.session_state
        or marker not in st.session_state
        or st.session_state[marker] != value
        or st.session_state[key] not in options
    ):
        st.session_state[key] = value if value in options else options[0]
        st.session_state[marker] = value
        return st.selectbox(label, options, format_func=format_func, key=key, **kwargs)
    # The shown option is also the widget's default. The browser falls back to the default when
    # it redraws the widget without a remembered value (seen after a fragment's rerun), and sends
    # it back: with option 0 as the default, an open room jumped to "+ New room" and a message
    # sent at that moment was lost. (Not in the run that writes the state: Streamlit warns when
    # both are given.)
    index = options.index(st.session_state[key])
    return st.selectbox(label, options, index=index, format_func=format_func, key=key, **kwargs)


def follow_latest_selectbox(label: str, options: Sequence[Any], *, key: str, **kwargs: Any) -> Any:
    """A select box over ``options`` (newest first) that moves to a new newest option when it
    showed the newest one before (a turn picker follows new turns); a choice of an older option
    stays put."""
    newest_key = f"_newest:{key}"
    options = list(options)
    newest = options[0] if options else None
    if key in st.session_state:
        was_newest = st.session_state[key] == st.session_state.get(newest_key)
        if st.session_state[key] not in options or was_newest:
            st.session_state[key] = newest
    st.session_state[newest_key] = newest
    return st.selectbox(label, options, key=key, **kwargs)


def keep_if_too_long(
    key: str, refused_key: str, limit: int, send: Callable[[str], None] | None = None
) -> None:
    """``on_submit`` of a chat box: a text over ``limit`` characters is not sent but put back into
    the box (``st.session_state[key]``), with the reason under ``refused_key`` for the page to
    show next to the box (until the next submission). Runs before the page, so the page sees no
    submission. The text is also kept under ``_pending:<key>`` until a run has drawn the box
    with it: a run cut short by a rerun (a new turn arrived) must not lose it. A text within the
    limit is given to ``send`` here, when there is one (see ``limited_chat_input``)."""
    text = st.session_state.get(key)
    if isinstance(text, str) and len(text) > limit:
        st.session_state[key] = text
        st.session_state[f"_pending:{key}"] = text
        st.session_state[refused_key] = (
            f"Not sent: a message is limited to {limit:,} characters and this one has "
            f"{len(text):,}. It is still in the box: shorten it, or split it into several."
        )
    else:
        st.session_state.pop(refused_key, None)
        if send is not None and isinstance(text, str) and text:
            send(text)


def limited_chat_input(
    label: str,
    *,
    key: str,
    limit: int,
    above: Any = None,
    send: Callable[[str], None] | None = None,
    **kwargs: Any,
) -> Any:
    """``st.chat_input`` that refuses a text over ``limit`` characters and keeps it in the box.

    The refusal is drawn in ``above`` (a container placed above the box by the caller, always
    drawn, so the box keeps its place and its text when the refusal comes or goes) and stays
    there while the refused text waits, through any number of reruns.

    ``send(text)``: called with an accepted text in the box's ``on_submit``, that is before the
    page's script runs. A text handled in the script instead is lost when a newer submission
    cuts the run short before it got there (Streamlit then starts over with the newer one
    only); a callback runs whole.
    """
    refused_key = f"_refused:{key}"
    pending = st.session_state.get(f"_pending:{key}")
    if pending is not None:
        st.session_state[key] = pending  # (again, if the run that had it was cut short)
    refused = st.session_state.get(refused_key)
    if refused:
        (above or st).error(refused, icon=":material/block:")
    message = st.chat_input(
        label, key=key, on_submit=keep_if_too_long, args=(key, refused_key, limit, send), **kwargs
    )
    st.session_state.pop(f"_pending:{key}", None)
    return message


def avatar(speaker: str, roster: Sequence[str], kind: str = "agent") -> str:
    """An icon per roster position (stable for a room); people and system notices differ."""
    if kind == "system":
        return SYSTEM_AVATAR
    if speaker in roster:
        return AGENT_AVATARS[list(roster).index(speaker) % len(AGENT_AVATARS)]
    return HUMAN_AVATAR


def field_error(problems: Mapping[str, str] | None, field: str) -> None:
    """Show the problem recorded for ``field`` (if any) right under it."""
    if problems and field in problems:
        st.error(escape_markdown(problems[field]), icon=":material/error:")


# --- models ------------------------------------------------------------------------------------

DEFAULT_CHOICE = "App default"
OFFLINE_CHOICE = "offline (stand-in, not an LLM)"
OTHER_CHOICE = "Other model…"


def model_choices() -> list[str]:
    """Options for a model picker: app default, offline, each provider with a key, other."""
    from conversation.models import DEFAULT_MODELS, available_providers

    providers = [f"{p}/{DEFAULT_MODELS[p]}" for p in available_providers() if p in DEFAULT_MODELS]
    return [DEFAULT_CHOICE, OFFLINE_CHOICE, *providers, OTHER_CHOICE]


def spec_label(spec: Mapping[str, Any] | None) -> str:
    """How a stored model spec reads in a picker or a table."""
    if not spec:
        return DEFAULT_CHOICE
    if spec.get("service") == "offline":
        return OFFLINE_CHOICE
    return f"{spec.get('service')}/{spec.get('model')}"


def model_picker(
    label: str, *, key: str, current: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any] | None, str | None]:
    """A model selector; returns ``(spec or None for the app default, problem or None)``.

    Specs never hold keys: keys stay in the environment (or ``st.secrets``).
    """
    options = model_choices()
    wanted = spec_label(current)
    if wanted not in options:
        options.insert(-1, wanted)
    choice = st.selectbox(label, options, index=options.index(wanted), key=key)
    if choice == DEFAULT_CHOICE:
        return None, None
    text = "offline" if choice == OFFLINE_CHOICE else choice
    if choice == OTHER_CHOICE:
        text = st.text_input(
            "Model name",
            key=f"{key}-other",
            placeholder="e.g. gpt-4o, anthropic/claude-3-5-sonnet-20241022, ollama/llama3",
            help="A model name, or service/model. The provider's key must be in the environment.",
        ).strip()
        if not text:
            return None, "Type a model name, or pick one from the list."
    if choice == OFFLINE_CHOICE:
        return offline_spec(key, current), None
    if current and spec_label(current) == choice:
        return dict(current), None
    return spec_for_choice(text)


def offline_spec(key: str, current: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The offline model's spec, with an optional pause per reply so a person can watch a room
    unfold (the stand-in answers instantly otherwise)."""
    parameters = dict((current or {}).get("parameters") or {}) if current else {}
    parameters.pop("scripted", None)
    pace = st.number_input(
        "Offline model: seconds per reply",
        min_value=0.0,
        max_value=30.0,
        value=float(parameters.get("latency", 0.0)),
        step=0.5,
        key=f"{key}-pace",
        help="0 answers at once; 1-2 s makes a room easy to watch and interrupt.",
    )
    if pace:
        parameters["latency"] = float(pace)
    else:
        parameters.pop("latency", None)
    return {"service": "offline", "model": "offline", "parameters": parameters}


def spec_for_choice(choice: str) -> tuple[dict[str, Any] | None, str | None]:
    """The model spec for a picker label or a model name: ``(spec, None)`` or ``(None, problem)``."""
    from conversation.models import model_spec, resolve_model

    text = "offline" if choice == OFFLINE_CHOICE else choice
    try:
        return model_spec(resolve_model(text)), None
    except ValueError as exc:
        return None, str(exc)


def describe_spec(spec: Mapping[str, Any] | None) -> str:
    """A person's description of a stored model spec (``App default`` when none)."""
    if not spec:
        return DEFAULT_CHOICE
    from conversation.models import describe_model, resolve_model

    try:
        return describe_model(resolve_model(dict(spec)))
    except ValueError as exc:
        return f"{spec_label(spec)} (unavailable: {exc})"


__all__ = [
    "avatar",
    "follow_latest_selectbox",
    "keep_if_too_long",
    "limited_chat_input",
    "synced_selectbox",
    "describe_spec",
    "escape_markdown",
    "field_error",
    "model_choices",
    "model_picker",
    "offline_spec",
    "spec_for_choice",
    "spec_label",
]


def progress_bar(start: str, step: str) -> Callable[[int, int], None]:
    """A progress bar saying ``start``, and the callback that moves it as work is done: ``n``
    of ``total``, said by ``step`` (``"Created {n:,} of {total:,} rooms"``: numbers only, so
    nothing a person wrote is drawn as markdown)."""
    bar = st.progress(0.0, text=start)

    def show(n: int, total: int) -> None:
        bar.progress(n / max(total, 1), text=step.format(n=n, total=total))

    return show
