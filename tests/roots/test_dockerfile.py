"""The image definition: it installs the package as the README does and runs its console script.

No Docker daemon runs where the tests do, so the file itself is checked.
"""

import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def instructions() -> list[tuple[str, str]]:
    out = []
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and line.split()[0].isupper():
            keyword, _, rest = line.partition(" ")
            out.append((keyword, rest.strip()))
    return out


def test_entrypoint_is_the_console_script_declared_by_the_package():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    entrypoints = [rest for keyword, rest in instructions() if keyword == "ENTRYPOINT"]
    assert entrypoints == ['["context-manager"]']
    assert "context-manager" in scripts


def test_the_package_is_installed_with_pip_like_the_readme_does():
    runs = [shlex.split(rest) for keyword, rest in instructions() if keyword == "RUN"]
    assert ["pip", "install", "."] in runs
    assert "pip install -e '.[dev]'" in (ROOT / "README.md").read_text()


def test_the_sources_the_install_needs_are_copied_first():
    copies = [rest for keyword, rest in instructions() if keyword == "COPY"]
    assert copies[0].split()[:2] == ["pyproject.toml", "README.md"]
    assert copies[1].split()[0] == "src"
