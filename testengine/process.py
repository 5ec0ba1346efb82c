"""Start the worker as a real subprocess against a test engine, and always kill it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO


def processes_flag(processes: int) -> tuple[str, ...]:
    """The worker's ``--processes`` argument, left out for one process: that is the default, and
    a worker built before the flag existed still starts."""
    return () if processes == 1 else ("--processes", str(processes))


class WorkerProcess:
    """``python -m context_manager --url <engine>``; stderr is kept in a file for assertions."""

    def __init__(
        self,
        url: str,
        *extra_args: str,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> None:
        self._log: IO[bytes] = tempfile.TemporaryFile()
        self._out: IO[bytes] = tempfile.TemporaryFile()
        full_env = dict(os.environ)
        full_env.pop("III_URL", None)
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "context_manager", "--url", url, *extra_args],
            stdout=self._out,
            stderr=self._log,
            stdin=subprocess.DEVNULL,
            env=full_env,
            cwd=cwd,
        )

    @property
    def stderr(self) -> str:
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def stdout_text(self) -> str:
        self._out.seek(0)
        return self._out.read().decode("utf-8", "replace")

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def interrupt(self, sig: int = signal.SIGINT) -> None:
        self.proc.send_signal(sig)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()
        self._out.close()
