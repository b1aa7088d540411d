"""The researcher's study screens: the study editor of the Experiments page (``editor``), the
study monitor (``monitor``), the study exports of the monitor and Results (``exports``) and the
study picker they share (``picker``). Each
module is imported by name where it is needed (``from ui.study.monitor import monitor_page``):
this face imports none of them.
"""

__all__ = ["editor", "exports", "monitor", "picker"]
