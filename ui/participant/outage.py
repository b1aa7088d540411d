"""What a participant sees while the study's service is out of reach: the study's own words,
"We lost contact with the server: keep this page open, your place is kept.", never Streamlit's
"Connection error ... Are you connected to the internet?" dialog.

Two outages, two ways of saying it:

- **The database** cannot be used (a PostgreSQL restart) while this app runs: every participant
  call raises ``StorageUnavailableError``; :func:`guarded` catches it and draws the words in
  place of what could not be read or written (a message in the box stays there), and the page's
  fragments try again at their interval, so the page comes back by itself.
- **The app** itself is gone (killed, restarted): no server is left to draw anything. The page
  carries :func:`connection_watch`, a fixed script of our own (nothing a person or a model wrote
  is in it) installed once into the page: while Streamlit's client says the connection is lost
  (its ``data-test-connection-state`` is not ``CONNECTED`` for most of a
  second), it hides Streamlit's badge and dialog and shows the study's words in a banner; Streamlit's client reconnects by itself (it pings every few seconds) and, when it is
  back, the banner goes and the page is drawn again from the token in its URL.

The study's clock counts neither outage against anyone (``conversation.study.clock.absence``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

import streamlit as st

T = TypeVar("T")

OUTAGE_TEXT = "We lost contact with the server: keep this page open, your place is kept."
#: The banner's element id (the browser test looks for it).
BANNER_ID = "study-outage"


def unavailable() -> type[Exception]:
    from conversation.exceptions import StorageUnavailableError

    return StorageUnavailableError


def guarded(call: Callable[[], T]) -> T | None:
    """``call()``; or, when the database cannot be reached, the study's words drawn and None."""
    try:
        return call()
    except unavailable():
        say_outage()
        return None


def say_outage() -> None:
    st.warning(OUTAGE_TEXT, icon=":material/cloud_off:")


_WATCH = """
(function () {
  if (window.__studyOutage) { return; }
  window.__studyOutage = true;
  var text = %(text)s;
  var style = document.createElement("style");
  style.textContent = '[data-testid="stConnectionStatus"], [data-testid="stDialog"],'
    + ' [data-testid="stStatusWidget"] { display: none !important; }';
  var banner = document.createElement("div");
  banner.id = %(banner)s;
  banner.setAttribute("role", "alert");
  banner.textContent = text;
  banner.style.cssText = "position:fixed;top:0;left:0;right:0;z-index:1000001;"
    + "padding:1rem;background:#fff4e5;color:#5f3700;border-bottom:1px solid #f0b567;"
    + "font:1rem/1.4 sans-serif;text-align:center;";
  var since = null;
  function connected() {
    var app = document.querySelector('[data-testid="stApp"]');
    var state = app && app.getAttribute("data-test-connection-state");
    return !state || state === "CONNECTED";
  }
  function check() {
    if (connected()) {
      since = null;
      if (banner.isConnected) { banner.remove(); style.remove(); }
      return;
    }
    since = since || Date.now();
    if (Date.now() - since > 750 && !banner.isConnected) {
      document.head.appendChild(style);
      document.body.appendChild(banner);
    }
  }
  setInterval(check, 250);
})();
"""


def connection_watch() -> None:
    """Install the watch that replaces Streamlit's connection dialog by the study's words (see
    the module docstring): an invisible component whose script adds it, once, to the page."""
    script = _WATCH % {"text": json.dumps(OUTAGE_TEXT), "banner": json.dumps(BANNER_ID)}
    installer = (
        "<script>(function(){var p=window.parent.document;"
        "var s=p.createElement('script');s.textContent="
        + json.dumps(script)
        + ";p.head.appendChild(s);})();</script>"
    )
    st.iframe(installer, height=1)


__all__ = ["BANNER_ID", "OUTAGE_TEXT", "connection_watch", "guarded", "say_outage"]
