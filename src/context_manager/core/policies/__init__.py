"""Policies published per namespace and per model: the ``budget``, ``retention`` and
``settings`` documents, their resolution and the effective configuration (docs/policies.md)."""
