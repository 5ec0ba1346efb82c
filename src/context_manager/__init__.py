"""context-manager: model-ready contexts for iii agents (wire API of context-manager 1.1.6).

The public surface is what :func:`call` and :func:`acall` take and raise; everything else is an
implementation module (see docs/architecture.md). Every exception the library raises is an
:class:`Error`.
"""

from context_manager._version import __version__
from context_manager.adapters.callable_summarizer import AsyncSummarizer, SyncSummarizer
from context_manager.api import UnknownFunction, acall, call
from context_manager.config.parse import ConfigError
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.wire.errors import CallError, Error

__all__ = [
    "DEFAULT_CONFIG",
    "AsyncSummarizer",
    "CallError",
    "ConfigError",
    "Error",
    "SyncSummarizer",
    "UnknownFunction",
    "WorkerConfig",
    "__version__",
    "acall",
    "call",
]
