"""When a room stops: composable conditions (``|``, ``&``) over the room's state, reasons as data (pure)."""
