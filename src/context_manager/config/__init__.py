"""Worker configuration: the record, its strict parser, paths and hot reload."""
from context_manager.config.model import DEFAULT_CONFIG, WorkerConfig

__all__ = ["DEFAULT_CONFIG", "WorkerConfig"]
