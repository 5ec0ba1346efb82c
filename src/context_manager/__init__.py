"""context-manager: model-ready contexts for iii agents (wire API of context-manager 1.1.6).

The public surface is what :func:`call` takes and raises; everything else is an implementation
module (see docs/architecture.md).
"""

from context_manager._version import __version__
from context_manager.adapters.callable_summarizer import SyncSummarizer
from context_manager.api import UnknownFunction, call
from context_manager.config.parse import ConfigError
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig
from context_manager.wire.errors import CallError

__all__ = [
    "DEFAULT_CONFIG",
    "CallError",
    "ConfigError",
    "SyncSummarizer",
    "UnknownFunction",
    "WorkerConfig",
    "__version__",
    "call",
]
