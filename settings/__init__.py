"""The process settings: every ``ROOMS_*`` environment variable declared once, read when used.

A package below everything else (it imports only pydantic, pydantic-settings and the standard
library): ``storage``, ``conversation`` and ``ui`` read their settings here, and nothing else in
the project reads ``os.environ`` for a setting (``tests/test_layers.py`` checks it).

- ``Settings``: the one declaration (``pydantic-settings``): each variable's name, type, default
  and one-line doc; ``env_name(field)`` is a field's variable, ``default(field)`` its default.
- ``SETTINGS``: the settings as the environment holds them when read (``SETTINGS.max_agents``);
  ``SettingError`` (a ``ValueError``) names a refused variable, its value and the fix.
- ``check()``: every setting read and checked at once, for a process that starts.
"""

from settings.declared import Settings, default, env_name
from settings.live import SETTINGS, SettingError, check

__all__ = ["SETTINGS", "SettingError", "Settings", "check", "default", "env_name"]
