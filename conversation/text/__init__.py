"""Text that crosses the trust boundary: neutralising template syntax, the sandboxed template
renderer, and the structured transcript a model is shown (pure)."""
