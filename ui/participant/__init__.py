"""The participant's page of a study (``pages/participate.py``): the page and its stages
(``page``), the consent and survey forms (``forms``), the live chat (``room``) and the chat box
and help channel (``chat``). Each module is imported by name where it is needed (``from
ui.participant.page import participant_page``): this face imports none of them.
"""

__all__ = ["chat", "forms", "page", "room"]
