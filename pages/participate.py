"""A study's participant page (``/participate?study=CODE``): consent, surveys, lobby, the chat
of their own seat, exit with a completion code. Drawn alone (no sidebar, no navigation) by
``ui.bootstrap``; everything is in ``ui.participant.page``."""

from ui.bootstrap import database, page_setup, wake_runner
from ui.participant.page import participant_page

page_setup()
participant_page(database(), wake=wake_runner)
