"""Render: IMB text, rich tables, JSON/CSV — reads results only."""
