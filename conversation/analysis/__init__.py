"""Follow-up EDSL questions over stored transcripts (\"was a deal reached?\")."""
