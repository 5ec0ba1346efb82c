"""``LOG_FORMAT=json``: every log record as one JSON object per line.

A record carrying ``call`` (the per-call facts of ``handlers.observe``) has those facts as
members of its object, so a log pipeline reads them without parsing the message.
"""

from __future__ import annotations

import logging
import os
import sys
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


_LEVELS = {"trace": "DEBUG", "debug": "DEBUG", "info": "INFO", "warn": "WARNING",
           "warning": "WARNING", "error": "ERROR", "off": "CRITICAL"}


def configure_logging() -> None:
    """Logs go to stderr; `RUST_LOG` or `LOG_LEVEL` holding a bare level overrides INFO;
    `LOG_FORMAT=json` writes one JSON object per line."""
    raw = (os.environ.get("LOG_LEVEL") or os.environ.get("RUST_LOG") or "info").strip().lower()
    level = _LEVELS.get(raw, "INFO")
    stream = logging.StreamHandler(sys.stderr)
    stream.setFormatter(formatter_for(os.environ.get("LOG_FORMAT")))
    logging.basicConfig(level=level, handlers=[stream])
