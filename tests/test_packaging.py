"""The installed package carries every folder of data the engine reads."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _declared_packages() -> set[str]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return set(tomllib.load(handle)["tool"]["setuptools"]["packages"])


def test_every_signature_family_is_a_declared_package() -> None:
    families = {
        f"denpex.rules.{folder.name}"
        for folder in (ROOT / "rules").iterdir()
        if folder.is_dir() and any(folder.glob("*.yaml"))
    }
    missing = families - _declared_packages()
    assert not missing, f"add these to [tool.setuptools] packages in pyproject.toml: {missing}"
