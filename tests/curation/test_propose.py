"""A confirmed incident's distinctive lines become a draft signature the curator can edit."""

from __future__ import annotations

import re

import pytest
import yaml

from denpex.curation.errors import CurationError
from denpex.curation.promote import current_library, read_draft
from denpex.curation.propose import propose
from denpex.signatures.signature import HAND_WRITTEN_MIN_PRIORITY
from tests.curation.conftest import LMDEPLOY, MONKEYOCR, Recorded


def test_an_unconfirmed_incident_is_not_drafted_from(recorded: Recorded) -> None:
    with pytest.raises(CurationError, match="no confirmed cause: denpex curate confirm"):
        propose(
            recorded.ids["lmdeploy-3992.log"],
            recorded.store,
            current_library(recorded.settings),
            recorded.settings,
        )


def test_the_draft_is_filled_from_the_incident_the_taxonomy_and_the_class_signatures(
    recorded: Recorded,
) -> None:
    incident = recorded.ids["lmdeploy-3992.log"]
    recorded.store.confirm(
        incident,
        "unsupported_gpu_arch",
        by="oncall",
        note="the kernel needs more shared memory per block than this GPU has; "
        "https://github.com/InternLM/lmdeploy/issues/3992",
    )
    library = current_library(recorded.settings)
    draft = propose(incident, recorded.store, library, recorded.settings)
    signature = draft.signature
    assert signature.id == "triton.out_of_resources"  # a new family: no code to change
    assert (signature.failure_class, signature.category, signature.owner) == (
        "unsupported_gpu_arch",
        "environment_configuration",
        "platform",
    )
    assert signature.role == "root_cause"
    assert signature.confidence >= 0.7
    # The pattern is Drain3's template, its variable parts named captures.
    (pattern,) = signature.patterns
    assert re.compile(pattern.regex).groupindex.keys() == {"required", "hardware_limit"}
    # The match examples are the incident's line and its queued twin's (the same template).
    assert [e.line for e in signature.examples.match] == [
        LMDEPLOY.read_text().splitlines()[0],
        MONKEYOCR.read_text().splitlines()[-1],
    ]
    assert signature.examples.match[0].captures == {
        "required": "131088",
        "hardware_limit": "101376",
    }
    # No-match examples are real near misses from healthy logs and other classes' cases.
    assert len(signature.examples.no_match) == 4
    assert any("out of shared memory" in line for line in signature.examples.no_match)
    assert not any(re.search(pattern.regex, line) for line in signature.examples.no_match)
    # Caveat and next steps come from the class's own signatures, with nothing unfilled.
    assert signature.caveat and signature.next_steps
    assert all("{" not in step for step in signature.next_steps)
    assert f"denpex incident {incident}" in signature.references
    assert "https://github.com/InternLM/lmdeploy/issues/3992" in signature.references
    # The curator edits a YAML file in the overlay's hidden drafts folder.
    assert draft.path == recorded.settings.overlay_dir / ".drafts" / "triton.out_of_resources.yaml"
    edited = yaml.safe_load(draft.path.read_text())
    edited["title"] = (
        "Triton kernel needs {required} bytes of shared memory, the GPU has {hardware_limit}"
    )
    draft.path.write_text(yaml.safe_dump(edited, sort_keys=False))
    reread, _ = read_draft(draft.path)
    assert reread.title.startswith("Triton kernel needs")


def test_a_line_read_only_by_the_generic_exception_reader_is_still_proposed_from(
    recorded: Recorded,
) -> None:
    incident = recorded.ids["lmdeploy-3992.log"]
    # The library reads the Triton line as an uncaught exception and nothing more.
    (line,) = recorded.store.get(incident).excerpt
    assert (line.signature_id, line.role, line.fallback) == (
        "python.uncaught_exception",
        "root_cause",
        True,
    )
    recorded.store.confirm(incident, "unsupported_gpu_arch", by="oncall")
    library = current_library(recorded.settings)
    draft = propose(incident, recorded.store, library, recorded.settings, write=False)
    assert draft.lines[0] == line.text
    # The draft out-ranks the generic reader, so once promoted it takes the line.
    generic = library.by_id()["python.uncaught_exception"]
    assert draft.signature.priority >= HAND_WRITTEN_MIN_PRIORITY > generic.priority
