"""Results: model, statistics, archive."""
