"""Tests of what share/integrations gives other tools (ReFrame)."""
