"""The Results page's helpers: its tables and pickers, the charts, the cached frames, and its tabs
(analysis, statistics by condition, judges and their agreement, qualitative coding, streamed
exports). Each module is imported by name where it is needed (``from ui.results import charts``):
this face imports none of them, so a page loads only what it draws (pandas and plotly load with
the first module that needs them).
"""

__all__ = [
    "agreement_view",
    "analysis_panel",
    "cached",
    "charts",
    "coding",
    "condition_stats",
    "judges",
    "static_table",
    "streamed_export",
    "tables",
]
