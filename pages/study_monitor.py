"""Study monitor: a study's participants live (lobby, rooms, idle, done), attrition by condition,
and the researcher's acts (lock the link, cap, message, remove or withdraw a participant, send
an attention check, amend a preregistered study, write the replication package); see
``ui.study.monitor``."""

from ui.bootstrap import actor, database, page_setup
from ui.study.monitor import monitor_page

page_setup()
monitor_page(database(), actor())
