"""Long-range future-entity recall of replayed sessions (``python -m bench.recall``)."""
