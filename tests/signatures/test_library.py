"""The signature library: clean under lint, every example a test, in both backends."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import pytest

from denpex.errors import RulesError
from denpex.match.lint import MatchKey, backend_disagreements, lint, match_keys, scan_winners
from denpex.match.scan import Matcher
from denpex.signatures import library as library_module
from denpex.signatures.backends import available_backends
from denpex.signatures.library import Library, default_rules_dir, library_of, load_library
from denpex.signatures.signature import Signature
from tests.conftest import EXAMPLES

# The session's scratch cache (tests/conftest.py): compiled databases are built once, as for a user.
CACHE = Path(os.environ["DENPEX_CACHE_DIR"])


# That the whole library is lint clean is `make test`'s lint step (`denpex rules lint`, which runs
# every example of every signature through the whole library in each backend and compares the
# backends' reports line by line), not repeated here: these tests check a sample and the logs.


def test_hyperscan_is_available_here() -> None:
    # CI runs on machines with the wheel; losing it silently would hide the re backend's speed.
    assert "hyperscan" in available_backends()


def _match_keys(matcher: Matcher, text: str) -> list[MatchKey]:
    return match_keys(matcher.scan_text(text, keep_all=True))


def _batch_keys(matcher: Matcher, texts: list[str]) -> list[list[MatchKey]]:
    return [match_keys(found) for found in matcher.scan_texts(texts, keep_all=True)]


def _every_family_sampled(library: Library, stride: int) -> list[Signature]:
    """The first signature of every family and every `stride`-th after it."""
    by_family: dict[str, list[Signature]] = {}
    for signature in library.signatures:
        by_family.setdefault(signature.family, []).append(signature)
    return [s for family in by_family.values() for s in family[::stride]]


def test_backends_agree_on_a_sample_of_example_lines_and_on_every_example_log(
    library: Library,
) -> None:
    hyperscan, regex = Matcher(library, "hyperscan", CACHE), Matcher(library, "re")
    sample = _every_family_sampled(library, stride=30)
    lines = [e.line for s in sample for e in s.examples.match]
    lines += [line for s in sample for line in s.examples.no_match]
    for line, by_hyperscan, by_re in zip(
        lines, _batch_keys(hyperscan, lines), _batch_keys(regex, lines), strict=True
    ):
        assert by_hyperscan == by_re, line[:80]
    for path in EXAMPLES.rglob("*.log"):
        text = path.read_text(errors="replace")
        assert _match_keys(hyperscan, text) == _match_keys(regex, text), path.name


def test_lint_names_the_lines_on_which_the_backends_differ(library: Library) -> None:
    # Two scanners that differ by one signature stand in for two backends that read one
    # pattern differently.
    xid = library_of([s for s in library.signatures if s.family == "xid"])
    without_79 = library_of([s for s in xid.signatures if s.id != "xid.79"])
    lines = [e.line for s in xid.signatures for e in s.examples.match]
    found_by = {
        "re": Matcher(xid, "re").scan_texts(lines, keep_all=True),
        "other": Matcher(without_79, "re").scan_texts(lines, keep_all=True),
    }
    problems = backend_disagreements(lines, found_by)
    assert problems and all("xid.79" in str(p) and "re vs other" in str(p) for p in problems)
    assert backend_disagreements(lines, {"re": found_by["re"], "same": found_by["re"]}) == []


def test_a_batch_of_texts_gives_what_each_text_gives_alone(library: Library) -> None:
    matcher = Matcher(library, "re")
    texts = [e.line for s in library.signatures[:60] for e in s.examples.match]
    texts += [p.read_text(errors="replace") for p in sorted(EXAMPLES.rglob("*.log"))[:3]]
    assert _batch_keys(matcher, texts) == [_match_keys(matcher, text) for text in texts]


def test_the_winners_lint_derives_are_what_a_scan_keeps(library: Library) -> None:
    # The lint scans every example once, keeping every signature, and derives the winners.
    matcher = Matcher(library, "hyperscan", CACHE)
    texts = [e.line for s in library.signatures[::7] for e in s.examples.match]
    texts += [line for s in library.signatures[::7] for line in s.examples.no_match]
    texts += [p.read_text(errors="replace") for p in sorted(EXAMPLES.rglob("*.log"))]

    def keys(found: list) -> list[tuple[str, int]]:
        return sorted((m.signature.id, m.event.line) for m in found)

    derived = [keys(scan_winners(found)) for found in matcher.scan_texts(texts, keep_all=True)]
    assert derived == [keys(found) for found in matcher.scan_texts(texts)]
    assert sum(map(len, derived)) > len(texts) // 2


def test_the_library_records_a_version_and_a_content_digest(library: Library) -> None:
    assert library.version == (default_rules_dir() / "VERSION").read_text().strip()
    assert library.label.startswith(library.version + "+")


def test_an_id_that_differs_from_its_path_is_rejected(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    (rules / "xid").mkdir(parents=True)
    (rules / "VERSION").write_text("0.0.1\n")
    source = (default_rules_dir() / "xid" / "79.yaml").read_text()
    (rules / "xid" / "fallen.yaml").write_text(source)
    with pytest.raises(RulesError, match="must equal its path"):
        load_library(rules)


def test_a_class_outside_the_taxonomy_is_rejected(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    (rules / "xid").mkdir(parents=True)
    (rules / "VERSION").write_text("0.0.1\n")
    source = (default_rules_dir() / "xid" / "79.yaml").read_text()
    (rules / "xid" / "79.yaml").write_text(source.replace("gpu_fell_off_bus", "gpu_on_fire"))
    with pytest.raises(RulesError, match="not a failure class"):
        load_library(rules)


def test_a_cached_library_equals_a_freshly_parsed_one() -> None:
    # Parsed here with no cache, against the session's cache as any process reads it (written
    # by whichever parsed it first, or made of files other cached libraries had parsed).
    fresh = load_library()
    cached = load_library(cache_dir=CACHE)
    assert isinstance(fresh.signatures, tuple)
    assert cached.signatures == fresh.signatures
    assert cached.label == fresh.label
    assert [(r.signature_id, r.pattern, r.spec, r.role) for r in cached.patterns] == [
        (r.signature.id, r.pattern, r.spec, r.role) for r in fresh.patterns
    ]


def _one_family(root: Path) -> Path:
    """A library of the Xid family alone: the cache behaves alike for 30 signatures or 10,000."""
    rules = root / "rules"
    shutil.copytree(default_rules_dir() / "xid", rules / "xid")
    (rules / "VERSION").write_text("0.0.1\n")
    return rules


def test_a_damaged_cache_is_rebuilt_not_trusted(tmp_path: Path) -> None:
    rules = _one_family(tmp_path)
    expected = tuple(load_library(rules, cache_dir=tmp_path).signatures)
    damaged = list(tmp_path.glob("library-*"))
    assert len(damaged) == 2  # the parsed library and the index of its files' sizes and times
    for cached in damaged:
        cached.write_bytes(cached.read_bytes()[: len(cached.read_bytes()) // 2])
    assert load_library(rules, cache_dir=tmp_path).signatures == expected


def test_a_cache_cut_while_its_library_is_in_use_is_a_clear_error(tmp_path: Path) -> None:
    # A cached library reads each signature from its file when first asked for; denpex only
    # ever replaces that file whole, but another program may cut it in place.
    rules = _one_family(tmp_path)
    load_library(rules, cache_dir=tmp_path)
    in_use = load_library(rules, cache_dir=tmp_path)
    (cached,) = tmp_path.glob("library-*.pickle")
    cached.write_bytes(cached.read_bytes()[:100])
    with pytest.raises(RulesError, match="changed while in use"):
        tuple(in_use.signatures)


class _RunsShell:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (self.command,))


def test_a_cache_file_that_would_run_code_is_not_loaded(tmp_path: Path) -> None:
    rules = _one_family(tmp_path)
    expected = tuple(load_library(rules, cache_dir=tmp_path).signatures)
    marker = tmp_path / "pwned"
    (cached,) = tmp_path.glob("library-*.pickle")
    cached.write_bytes(pickle.dumps(_RunsShell(f"touch {marker}")))
    assert load_library(rules, cache_dir=tmp_path).signatures == expected
    assert not marker.exists()


def test_touched_files_find_the_cache_by_their_content(tmp_path: Path) -> None:
    rules = _one_family(tmp_path)
    first = load_library(rules, cache_dir=tmp_path / "cache")
    for path in (rules / "xid").iterdir():
        os.utime(path, ns=(1, 1))  # a checkout sets new times on unchanged files
    (cached,) = (tmp_path / "cache").glob("library-*.pickle")
    before = cached.stat().st_mtime_ns
    again = load_library(rules, cache_dir=tmp_path / "cache")
    assert again.signatures == first.signatures and again.label == first.label
    assert cached.stat().st_mtime_ns == before  # read, not parsed and written again
    assert len(list((tmp_path / "cache").glob("library-index-*"))) == 2


def test_an_edited_file_is_parsed_again(tmp_path: Path) -> None:
    rules = _one_family(tmp_path)
    first = load_library(rules, cache_dir=tmp_path / "cache")
    edited = rules / "xid" / "79.yaml"
    edited.write_text(edited.read_text().replace('title: "', 'title: "Edited: ', 1))
    again = load_library(rules, cache_dir=tmp_path / "cache")
    assert again.by_id()["xid.79"].title.startswith("Edited: ")
    assert again.digest != first.digest


def _parsed_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files `load_library` parses from now on, as `<family>/<name>`."""
    parsed: list[str] = []
    real = library_module.load_signature

    def recording(path: Path, rules_dir: Path) -> Signature:
        parsed.append(path.relative_to(rules_dir).as_posix())
        return real(path, rules_dir)

    monkeypatch.setattr(library_module, "load_signature", recording)
    return parsed


def test_a_variant_library_parses_only_the_files_no_cached_library_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = _one_family(tmp_path)
    cache = tmp_path / "cache"
    load_library(rules, cache_dir=cache)
    variant = tmp_path / "variant"
    shutil.copytree(rules, variant)
    shutil.copytree(default_rules_dir() / "gloo", variant / "gloo")
    edited = variant / "xid" / "79.yaml"
    edited.write_text(edited.read_text().replace('title: "', 'title: "Edited: ', 1))
    parsed = _parsed_paths(monkeypatch)
    again = load_library(variant, cache_dir=cache)
    gloo = [f"gloo/{path.name}" for path in (variant / "gloo").glob("*.yaml")]
    assert sorted(parsed) == sorted(["xid/79.yaml", *gloo])
    assert again.by_id()["xid.79"].title.startswith("Edited: ")
    assert tuple(again.signatures) == tuple(load_library(variant).signatures)
    # A third library takes its files from both cached ones: the original 79 from the first,
    # never the variant's edit, and gloo from the variant.
    parsed.clear()
    mixed = tmp_path / "mixed"
    shutil.copytree(rules, mixed)
    shutil.copytree(default_rules_dir() / "gloo", mixed / "gloo")
    both = load_library(mixed, cache_dir=cache)
    assert parsed == []
    assert not both.by_id()["xid.79"].title.startswith("Edited: ")
    assert tuple(both.signatures) == tuple(load_library(mixed).signatures)


def test_an_edited_file_is_read_again_and_a_deleted_one_dropped_though_cached_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = _one_family(tmp_path)
    cache = tmp_path / "cache"
    first = load_library(rules, cache_dir=cache)
    parsed = _parsed_paths(monkeypatch)
    (rules / "xid" / "48.yaml").unlink()
    edited = rules / "xid" / "79.yaml"
    edited.write_text(edited.read_text().replace('title: "', 'title: "Edited: ', 1))
    again = load_library(rules, cache_dir=cache)
    assert parsed == ["xid/79.yaml"]
    assert "xid.48" in first.by_id() and "xid.48" not in again.by_id()
    assert again.by_id()["xid.79"].title.startswith("Edited: ")
    assert tuple(again.signatures) == tuple(load_library(rules).signatures)
    assert [r.signature.id for r in again.patterns] == [
        r.signature.id for r in load_library(rules).patterns
    ]


def test_a_cached_file_moved_to_another_name_is_parsed_there_and_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same bytes under another name are another signature file: its id must equal its
    # path, which only parsing it there can say.
    rules = _one_family(tmp_path)
    cache = tmp_path / "cache"
    load_library(rules, cache_dir=cache)
    (rules / "xid" / "79.yaml").rename(rules / "xid" / "fallen.yaml")
    parsed = _parsed_paths(monkeypatch)
    with pytest.raises(RulesError, match="must equal its path"):
        load_library(rules, cache_dir=cache)
    assert parsed == ["xid/fallen.yaml"]


def test_leaving_out_a_family_or_adding_a_draft_reads_no_cached_signature(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = _one_family(tmp_path)
    shutil.copytree(default_rules_dir() / "gloo", rules / "gloo")
    parsed = load_library(rules)  # the same library as parsed signatures, in a tuple
    cached = load_library(rules, cache_dir=tmp_path / "cache")
    draft = parsed.by_id()["xid.79"].model_copy(update={"id": "curated.fell_off"})
    read: list[int] = []
    real = library_module.SignatureStore._read

    def reading(store: library_module.SignatureStore, position: int) -> Signature:
        read.append(position)
        return real(store, position)

    monkeypatch.setattr(library_module.SignatureStore, "_read", reading)
    variants = [
        (cached.without_families(["gloo"]), parsed.without_families(["gloo"])),
        (cached.without(["xid.79"]), parsed.without(["xid.79"])),
        (cached.with_signatures([draft]), parsed.with_signatures([draft])),
        (
            cached.with_signatures([draft]).without_families(["xid"]),
            parsed.with_signatures([draft]).without_families(["xid"]),
        ),
    ]
    assert read == []
    for lazy, whole in variants:
        assert lazy.ids() == [s.id for s in whole.signatures]
        assert [r.signature_id for r in lazy.patterns] == [r.signature.id for r in whole.patterns]
        assert [r.spec for r in lazy.patterns] == [r.spec for r in whole.patterns]
        assert (lazy.digest, lazy.added_from) == (whole.digest, whole.added_from)
        assert read == []
    for lazy, whole in variants:
        assert lazy.signatures == whole.signatures
        assert [r.signature for r in lazy.patterns] == [r.signature for r in whole.patterns]
    with pytest.raises(RulesError, match="already in the library"):
        cached.with_signatures([parsed.by_id()["gloo.connect_to_hostname_alias"]])


def test_a_cached_scanner_database_finds_the_same_lines(
    tmp_path: Path, library: Library, matcher: Matcher
) -> None:
    text = (EXAMPLES / "torchrun-bad-sample" / "launcher.log").read_text()
    # The families that fire on the text: a database compiled afresh takes seconds per 10,000
    # signatures, and the cache keeps a small one as it keeps a large one.
    fired = {m.signature.family for m in matcher.scan_text(text, keep_all=True)}
    small = library.without_families({s.family for s in library.signatures} - fired)
    first = _match_keys(Matcher(small, "hyperscan", tmp_path), text)
    assert list(tmp_path.glob("hyperscan-*.db"))
    second = _match_keys(Matcher(small, "hyperscan", tmp_path), text)
    assert first == second and first
    assert first == _match_keys(matcher, text)


def test_lint_names_an_example_a_backend_does_not_match(tmp_path: Path) -> None:
    (tmp_path / "VERSION").write_text("0.0.1\n")
    family = tmp_path / "gloo"
    family.mkdir()
    text = (default_rules_dir() / "gloo" / "connect_to_hostname_alias.yaml").read_text()
    broken = text.replace(
        "connect [127.0.1.1]:3210: Connection refused", "connect [127.0.1.1]:3210"
    )
    (family / "connect_to_hostname_alias.yaml").write_text(broken)
    problems = [str(p) for p in lint(rules_dir=tmp_path)]
    assert any("gloo.connect_to_hostname_alias" in p for p in problems), problems
