"""`diagnose` end to end on real multi-rank PyTorch output."""

from __future__ import annotations

from denpex.models import Status
from tests.conftest import BAD_SAMPLE, diagnose_paths


def test_the_rank_that_raised_first_is_the_root_and_its_peers_are_the_cascade() -> None:
    diagnosis = diagnose_paths([str(BAD_SAMPLE)])
    top = diagnosis.root_causes[0]
    assert diagnosis.status is Status.confident
    assert top.originating_rank == 3
    assert "IndexError" in top.evidence[0].text
    # Ranks 0 and 2 saw the connection close; the launcher tore the rest down.
    assert {0, 2} <= set(top.explains.ranks)
    assert "gloo.connection_closed_by_peer" in top.explains.signature_ids
    assert "torchelastic.sigterm_fanout" in top.explains.signature_ids


def test_the_traceback_travels_with_its_exception_line() -> None:
    top = diagnose_paths([str(BAD_SAMPLE)]).root_causes[0]
    first = top.evidence[0]
    assert first.context[0] == "Traceback (most recent call last):"
    assert any("torch/nn/functional.py" in line for line in first.context)


def test_every_input_is_listed_with_its_kind_and_size() -> None:
    diagnosis = diagnose_paths([str(BAD_SAMPLE)])
    kinds = {i.source.rsplit("/", 1)[-1]: i.kind for i in diagnosis.inputs}
    assert kinds["launcher.log"] == "launcher"
    assert kinds["stderr.log"] == "rank_log"
    assert all(i.bytes == 0 or i.lines > 0 for i in diagnosis.inputs)


def test_provenance_records_the_library_version() -> None:
    diagnosis = diagnose_paths([str(BAD_SAMPLE)])
    assert diagnosis.provenance.rules_version.startswith("0.")
    assert diagnosis.provenance.elapsed_ms >= 0


def test_logs_kept_by_a_container_runtime_diagnose_like_the_originals(tmp_path) -> None:
    """The same run, each line as containerd stores it (`<time> <stream> F <line>`): the rank
    prefixes behind the envelope still attribute, and a traceback is still one event."""
    for source in BAD_SAMPLE.rglob("*.log"):
        target = tmp_path / source.relative_to(BAD_SAMPLE)
        target.parent.mkdir(parents=True, exist_ok=True)
        lines = source.read_text(encoding="utf-8").splitlines()
        target.write_text(
            "".join(
                f"2026-11-30T06:21:{i // 1000:02d}.{i % 1000:03d}000000Z stderr F {line}\n"
                for i, line in enumerate(lines)
            ),
            encoding="utf-8",
        )
    original = diagnose_paths([str(BAD_SAMPLE)]).root_causes[0]
    wrapped = diagnose_paths([str(tmp_path)]).root_causes[0]
    assert wrapped.failure_class == original.failure_class
    assert wrapped.originating_rank == original.originating_rank == 3
    assert wrapped.evidence[0].context[0].endswith("Traceback (most recent call last):")


def test_an_input_that_begins_inside_a_traceback_keeps_the_frames_it_holds(tmp_path) -> None:
    """An excerpt cut below the traceback's header: the frames above the exception line are
    still its context (where it was raised decides how its rank is read)."""
    rank3 = next(p for p in BAD_SAMPLE.rglob("stderr.log") if p.parent.name == "3")
    lines = rank3.read_text(encoding="utf-8").splitlines()
    header = next(i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line)
    excerpt = tmp_path / "stderr.log"
    excerpt.write_text("\n".join(lines[header + 1 :]) + "\n", encoding="utf-8")
    full = diagnose_paths([str(rank3)]).root_causes[0].evidence[0]
    cut = diagnose_paths([str(excerpt)]).root_causes[0].evidence[0]
    assert cut.text == full.text
    assert cut.context == full.context[1:]  # the same frames, without the header
