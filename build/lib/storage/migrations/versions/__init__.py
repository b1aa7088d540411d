"""Numbered revisions (0001, 0002, ...), each applied in one transaction."""
