"""context-manager: model-ready contexts for iii agents (wire API of context-manager 1.1.6)."""

from context_manager._version import __version__
from context_manager.api import UnknownFunction, call
from context_manager.wire.errors import CallError

__all__ = ["CallError", "UnknownFunction", "__version__", "call"]
