"""Worker configuration: the record, its strict parser, paths and hot reload."""
from context_manager.core.settings import DEFAULT_CONFIG, WorkerConfig

__all__ = ["DEFAULT_CONFIG", "WorkerConfig"]
