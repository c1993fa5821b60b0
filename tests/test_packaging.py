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


def _copied_into_the_image() -> set[str]:
    """The sources of the Dockerfile's COPY instructions (the last word is the destination)."""
    sources: set[str] = set()
    for line in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines():
        words = line.split()
        if words[:1] == ["COPY"]:
            sources.update(word for word in words[1:-1] if not word.startswith("--"))
    return sources


def test_the_container_image_copies_every_folder_the_package_is_built_from() -> None:
    copied = _copied_into_the_image()
    absent = sorted(source for source in copied if not (ROOT / source).exists())
    assert not absent, f"the Dockerfile copies what the repository no longer has: {absent}"
    with (ROOT / "pyproject.toml").open("rb") as handle:
        folders = set(tomllib.load(handle)["tool"]["setuptools"]["package-dir"].values())
    uncopied = sorted(folders - copied)
    assert not uncopied, f"the Dockerfile builds the package without: {uncopied}"
