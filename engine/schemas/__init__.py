"""Published JSON Schemas, generated from the pydantic models and checked in beside them.

A test regenerates each schema and compares it with the file here, so the published contract
cannot drift from the code. Regenerate with `denpex schema > engine/schemas/diagnosis.schema.json`
and, for the hang report (`hang_schema`), by printing `json.dumps(hang_schema(), indent=2)` into
`engine/schemas/hang.schema.json`.
"""

from __future__ import annotations

from typing import Any

from denpex.models import Diagnosis

SCHEMA_ID = "https://github.com/denpex/denpex/schemas/diagnosis.schema.json"
HANG_SCHEMA_ID = "https://github.com/denpex/denpex/schemas/hang.schema.json"


def diagnosis_schema() -> dict[str, Any]:
    schema = Diagnosis.model_json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def hang_schema() -> dict[str, Any]:
    """The JSON Schema of `denpex hang --format json` (`HangReport`)."""
    from denpex.hang.models import HangReport

    schema = HangReport.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": HANG_SCHEMA_ID,
        **schema,
    }
