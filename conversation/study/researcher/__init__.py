"""The researcher's side of a study: launching it and its switches (``launch``), every study at
a glance (``listing``), the live monitor and the acts on a participant (``monitor``), and the
exports (``exports``)."""

from conversation.study.researcher.launch import launch_study, study_links
from conversation.study.researcher.listing import list_studies
from conversation.study.researcher.monitor import study_monitor

__all__ = ["launch_study", "list_studies", "study_links", "study_monitor"]
