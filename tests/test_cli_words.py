"""What a reader of the command line sees: ``spanft --version`` and the profiles that ``spanft profile`` names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def _spanft(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spanft.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_version_is_the_projects():
    done = _spanft("--version")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert done.returncode == 0 and done.stdout == f"spanft {version}\n"


def test_profile_help_names_every_profile_file():
    done = _spanft("profile", "--help")
    words = " ".join(done.stdout.split())  # argparse wraps the help
    stems = sorted(path.stem for path in (ROOT / "profiles").glob("*.yaml"))
    assert done.returncode == 0 and len(stems) >= 3
    assert all(f"{stem} (" in words for stem in stems), words
