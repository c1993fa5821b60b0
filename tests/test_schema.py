"""The published JSON Schema is the one the models generate, and diagnoses validate against it."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema

from denpex.schemas import diagnosis_schema
from tests.conftest import BAD_SAMPLE, diagnose_paths


def _published() -> dict:
    text = resources.files("denpex.schemas").joinpath("diagnosis.schema.json").read_text()
    return json.loads(text)


def test_the_schema_file_equals_the_generated_schema() -> None:
    assert _published() == diagnosis_schema(), "regenerate: denpex schema > engine/schemas/..."


def test_a_real_diagnosis_validates_against_the_published_schema() -> None:
    document = json.loads(diagnose_paths([str(BAD_SAMPLE)]).model_dump_json())
    jsonschema.validate(document, _published())


def test_the_contract_fields_keep_their_names() -> None:
    properties = _published()["properties"]
    assert {
        "schema_version",
        "status",
        "summary",
        "root_causes",
        "timeline",
        "inputs",
        "provenance",
    } <= set(properties)
    root = _published()["$defs"]["RootCause"]["properties"]
    assert {
        "failure_class",
        "category",
        "signature_id",
        "confidence",
        "source",
        "best_effort",
        "originating_rank",
        "originating_host",
        "first_seen",
        "evidence",
        "explains",
        "next_steps",
        "owner",
    } <= set(root)
