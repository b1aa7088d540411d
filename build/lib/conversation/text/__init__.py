"""Text that crosses the trust boundary: size limits (measured before parsing), neutralising
template syntax and the sandboxed template renderer, the structured transcript a model is shown,
and a token estimate that errs high (pure)."""

from conversation.text.limits import MAX_MESSAGE_CHARS, check_json_value, check_text
from conversation.text.safety import SafeTemplate, neutralize, neutralize_value
from conversation.text.tokens import estimate_tokens
from conversation.text.transcript import (
    parse_transcript,
    render_transcript,
    strip_echo,
    transcript_record,
)

__all__ = [
    "MAX_MESSAGE_CHARS",
    "SafeTemplate",
    "check_json_value",
    "check_text",
    "estimate_tokens",
    "neutralize",
    "neutralize_value",
    "parse_transcript",
    "render_transcript",
    "strip_echo",
    "transcript_record",
]
