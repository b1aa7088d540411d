"""The researcher's study screens: the study editor of the Experiments page, with its Freeze
(``editor``), the study monitor (``monitor``) and its panels (``checks``: attention checks and
comprehension tries; ``withdrawal``; ``preregistration``: frozen or not, amendments;
``signals``: signals and exclusions; ``package``: the replication package), how the monitor's
controls act (``acting``), the study exports of the monitor and Results (``exports``) and the
study picker they share (``picker``). Each module is imported by name where it is needed
(``from ui.study.monitor import monitor_page``): this face imports none of them.
"""

__all__ = [
    "acting",
    "checks",
    "editor",
    "exports",
    "monitor",
    "package",
    "picker",
    "preregistration",
    "signals",
    "withdrawal",
]
