"""An emitter's pinned sources (catalogs/<emitter>/source.yaml) and its extractor.

Consumes source.yaml and a checkout (a git work tree, a bare git directory such as a `fetch`
mirror, or a plain directory holding one release); produces the source tree of each pinned
release in a scratch directory and the messages `extract.py` finds there.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from catalogs.core.message import Message
from catalogs.core.pattern import NameRule

CATALOGS_DIR = Path(__file__).resolve().parents[1]


class Release(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    line: str = Field(description="the release line users name, e.g. 2.18")
    ref: str = Field(description="the git ref pinned for it, e.g. v2.18.6-1")


class RenderValue(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    after: str = Field(description="regex the literal text before a string placeholder ends in")
    value: str


class NamedPlaceholder(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    after: str = Field(
        description="regex the message text before the placeholder ends in (earlier "
        "placeholders written as in the format, e.g. '^\\[$' or 'Signal: %s \\($')"
    )
    before: str | None = Field(None, description="regex the text after it begins with")
    name: str = Field(pattern=r"^[a-z_][a-z0-9_]*$", description="the capture name")
    regex: str = Field("", description="what its value is matched by (else its conversion's)")
    value: str = Field("", description="the value rendered examples carry")

    @model_validator(mode="after")
    def _compiles(self) -> NamedPlaceholder:
        for pattern in (self.after, self.before, self.regex):
            if pattern:
                try:
                    re.compile(pattern)
                except re.error as error:
                    raise ValueError(f"names: {pattern!r} does not compile: {error}") from None
        if self.value and self.regex and not re.fullmatch(self.regex, self.value):
            raise ValueError(f"names.{self.name}: value {self.value!r} does not match its regex")
        return self

    def rule(self) -> NameRule:
        before = re.compile(self.before) if self.before else None
        return NameRule(re.compile(self.after), before, self.name, self.regex, self.value)


class SourceSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    emitter: str
    repo: str = Field(
        description="where the source comes from, e.g. https://github.com/NVIDIA/nccl"
    )
    releases: list[Release] = Field(min_length=1, description="oldest first")
    paths: list[str] = Field(
        default_factory=list,
        description="what extract.py reads; a git exclude pathspec (':(exclude)src/kernels/*.spv') "
        "leaves out files the mirror does not hold (large binaries)",
    )
    line_template: str | dict[str, str] = Field(
        "{message}",
        description="the emitter's real line prefix around {message} (or one per level, '*' "
        "for the rest); may use {file} {path} {basename} {stem} {module} {line} {level} "
        "{function}",
    )
    file_prefix: str = Field("", description="removed from the file path to give {path}")
    anchors: dict[str, str] = Field(
        default_factory=dict,
        description="per level, the literal the emitter prints right before each message "
        "(NCCL: 'NCCL WARN '); a message too generic alone is matched after it",
    )
    anchor_patterns: dict[str, str] = Field(
        default_factory=dict,
        description="per level, a regex that stands for the anchor in the patterns, for the "
        "prefix's other spellings; it must match the anchor's own text",
    )
    min_words: int = Field(
        3,
        ge=2,
        description="words of 3+ letters a message needs to be matched without an anchor; "
        "2 only for an emitter whose every message has a distinctive shape",
    )
    level_min_words: dict[str, int] = Field(
        default_factory=dict,
        description="per level, the words a message of that level needs alone, where each of "
        "them has a distinctive shape of its own (Open MPI's signal handler: '[host:pid] ' "
        "before every line); at least 1",
    )
    captures: dict[str, str] = Field(
        default_factory=dict, description="word before a number -> capture name (over defaults)"
    )
    covered_by: list[str] = Field(
        default_factory=list,
        description="catalog families of the emitter this one forks (RCCL: nccl_cat): a message "
        "whose rendered line one of their signatures matches is mapped to that signature and "
        "generates nothing here, as for a hand-written one",
    )
    captures_after: dict[str, str] = Field(default_factory=dict)
    openings: bool = Field(
        False,
        description="a multi-line message is matched by its opening line as well as by its most "
        "distinctive one (help texts printed whole, read from the top: Open MPI, PRRTE, MPICH); "
        "off for emitters whose multi-line messages begin with a sentence other programs print "
        "too (Accelerate's and Transformers' 'Some modules are dispatched on the CPU or the "
        "disk.')",
    )
    names: list[NamedPlaceholder] = Field(
        default_factory=list,
        description="placeholders no word next to them names, named by the text around them "
        "(a '[%s:%05d] ' prefix's host and pid)",
    )
    render: list[RenderValue] = Field(default_factory=list)
    excerpts: bool = Field(
        False,
        description="the checkout's files are excerpts of the upstream files (the statements "
        "that print failures, copied when the repository is too large to fetch): their line "
        "numbers are not upstream's, so a signature's reference names the file, not a line",
    )

    @model_validator(mode="after")
    def _anchor_patterns_match_their_anchor(self) -> SourceSpec:
        if any(words < 1 for words in self.level_min_words.values()):
            raise ValueError("level_min_words: a message needs at least one word")
        for level, pattern in self.anchor_patterns.items():
            anchor = self.anchors.get(level)
            if anchor is None:
                raise ValueError(f"anchor_patterns.{level}: no anchor of that level")
            try:
                matches = re.fullmatch(pattern, anchor, re.ASCII) is not None
            except re.error as error:
                raise ValueError(f"anchor_patterns.{level}: {error}") from None
            if not matches:
                raise ValueError(f"anchor_patterns.{level} does not match its anchor {anchor!r}")
        return self

    def name_rules(self) -> list[NameRule]:
        return [named.rule() for named in self.names]

    def min_words_for(self, level: str) -> int:
        return self.level_min_words.get(level, self.min_words)

    def line_names(self) -> list[str]:
        return [release.line for release in self.releases]

    def anchor_for(self, level: str) -> str:
        return self.anchors.get(level) or self.anchors.get("*", "")

    def anchor_pattern_for(self, level: str) -> str:
        """The regex for the anchor `anchor_for(level)` gives, or "" to match it literally."""
        return self.anchor_patterns.get(level if level in self.anchors else "*", "")

    def template_for(self, level: str) -> str:
        if isinstance(self.line_template, str):
            return self.line_template
        return self.line_template.get(level) or self.line_template.get("*") or "{message}"


def emitter_dir(emitter: str, root: Path = CATALOGS_DIR) -> Path:
    path = root / emitter
    if not (path / "source.yaml").is_file():
        raise ValueError(f"no catalog for {emitter!r}: {path}/source.yaml does not exist")
    return path


def load_source(folder: Path) -> SourceSpec:
    try:
        return SourceSpec.model_validate(
            yaml.safe_load((folder / "source.yaml").read_text(encoding="utf-8"))
        )
    except (OSError, yaml.YAMLError, ValidationError) as error:
        raise ValueError(f"{folder}/source.yaml: {error}") from None


Extractor = Callable[[Path, str], list[Message]]


def load_extractor(folder: Path) -> Extractor:
    path = folder / "extract.py"
    spec = importlib.util.spec_from_file_location(f"catalogs.{folder.name}.extract", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path}: cannot be imported")
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    extract = getattr(module, "extract", None)
    if not callable(extract):
        raise ValueError(f"{path}: defines no extract(checkout, release)")
    return extract


def _git_dir(checkout: Path) -> Path | None:
    result = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--git-dir"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        return None
    found = Path(result.stdout.strip())
    return found if found.is_absolute() else (checkout / found).resolve()


@contextmanager
def release_tree(checkout: Path, ref: str, paths: list[str]) -> Iterator[Path]:
    """The files of `ref` (only `paths`, when given) in a scratch directory, removed after.

    A checkout that is not a git repository is taken as the tree of the release asked for."""
    git_dir = _git_dir(checkout)
    if git_dir is None:
        yield checkout
        return
    scratch = Path(tempfile.mkdtemp(prefix="catalog-"))
    try:
        archive = scratch / "tree.tar"
        command = ["git", "--git-dir", str(git_dir), "archive", "--format=tar", ref]
        existing = [p for p in paths if p.startswith(":(exclude)") or _exists(git_dir, ref, p)]
        if all(p.startswith(":(exclude)") for p in existing):
            existing = []  # only exclusions: none of the paths is in this release
        command += ["--", *existing] if existing else []
        with archive.open("wb") as handle:
            result = subprocess.run(command, stdout=handle, stderr=subprocess.PIPE, check=False)
        if result.returncode != 0:
            raise ValueError(f"git archive {ref}: {result.stderr.decode(errors='replace')}")
        tree = scratch / "tree"
        tree.mkdir()
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")
        archive.unlink()
        yield tree
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _exists(git_dir: Path, ref: str, path: str) -> bool:
    result = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "-e", f"{ref}:{path}"],
        capture_output=True,
        check=False,
    )
    return result.returncode == 0
