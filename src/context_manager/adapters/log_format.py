"""``LOG_FORMAT=json``: every log record as one JSON object per line.

A record carrying ``call`` (the per-call facts of ``handlers.observe``) has those facts as
members of its object, so a log pipeline reads them without parsing the message.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import orjson


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        facts = getattr(record, "call", None)
        if isinstance(facts, dict):
            document.update(facts)
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(document, default=str).decode("utf-8")


def formatter_for(log_format: str | None) -> logging.Formatter:
    """``json`` (any case) selects JSON lines; anything else the plain text lines."""
    if (log_format or "").strip().lower() == "json":
        return JsonFormatter()
    return logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
