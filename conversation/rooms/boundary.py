"""The rooms' name for the one storage-error boundary, ``conversation.boundary`` (where it is
declared, below every concept that reaches storage, the model support included)."""

from conversation.boundary import storage_errors, translated, translating

__all__ = ["storage_errors", "translated", "translating"]
