"""Real lines Apache Spark printed in failed jobs meet the signatures generated from its
error-condition file (catalogs/spark), its reviewed mapping gives the runtime conditions their
mechanism and keeps the SQL engine's answers to a query out of the evidence, and its extractor
reads the file as Spark prints it ("[NAME] " before a condition's text, a sub-condition after its
parent's, the legacy conditions bare).

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from catalogs.core import Decision, Mapping, Message, load_mapping
from catalogs.spark.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, catalog_hits

FAMILY = "spark_cat"
ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "rules"


@cache
def _mapping() -> Mapping:
    return load_mapping(ROOT / "catalogs" / "spark" / "mapping.yaml")


def _decide(text: str, level: str) -> Decision:
    """The mapping's decision on a condition as the extractor reads it (style `angle`)."""
    file = "common/utils/src/main/resources/error/error-conditions.json"
    return _mapping().decide(Message("spark", "4.3", text, "angle", file, 1, level, "X"))


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/NVIDIA/cudf-spark/pull/14903: a task's execution memory ran out (Spark 4)
        (
            "org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage"
            " 13547.0 failed 1 times, most recent failure: Lost task 0.0 in stage 13547.0 (TID"
            " 33405) (ip-10-59-156-36.us-west-2.compute.internal executor driver):"
            " org.apache.spark.memory.SparkOutOfMemoryError: [UNABLE_TO_ACQUIRE_MEMORY] Unable to"
            " acquire 65536 bytes of memory, got 0. SQLSTATE: 53200",
            "host_oom",
        ),
        # github.com/moj-analytical-services/splink/issues/2689: no Parquet file to read
        (
            "pyspark.errors.exceptions.captured.AnalysisException: [UNABLE_TO_INFER_SCHEMA] Unable"
            " to infer schema for Parquet. It must be specified manually.",
            "corrupt_or_missing_data",
        ),
        # github.com/pola-rs/polars/issues/13818: Spark 3.5 reading another writer's Parquet
        (
            "org.apache.spark.SparkException: Encountered error while reading file"
            " file:///tmp/test_polars_write_for_spark.parquet. Details:",
            "corrupt_or_missing_data",
        ),
        # github.com/featureform/featureform/issues/901: a write to ADLS failed
        (
            "org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage"
            " 287.0 failed 4 times, most recent failure: Lost task 0.3 in stage 287.0 (TID 548)"
            " (10.139.64.6 executor 1): org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task"
            " failed while writing rows to abfss://<container>@<account>.dfs.core.windows.net/"
            "pathPrefix/featureform/Transformation/embed_text_slim_v6/ucb_ali_3/"
            "2023-06-14-23-49-09-336335.",
            "python_exception",
        ),
        # github.com/apache/spark/pull/43983: a Scala UDF that threw
        (
            "org.apache.spark.SparkException: Job aborted due to stage failure: Task 3 in stage"
            " 0.0 failed 1 times, most recent failure: Lost task 3.0 in stage 0.0 (TID 3)"
            " (192.168.188.21 executor driver): org.apache.spark.SparkException:"
            " [FAILED_EXECUTE_UDF] Failed to execute user defined function (`"
            " (cmd2$Helper$$Lambda$2170/0x000000f001d23000)`: (int) => int). SQLSTATE: 39000",
            "python_exception",
        ),
    ],
)
def test_a_real_spark_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "failure_class"),
    [
        # 4.3 error-conditions.json: a class of SQLSTATE 42 that states a mechanism
        ("[PATH_NOT_FOUND] Path does not exist: <path>.", "42K03", "corrupt_or_missing_data"),
        (
            "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: <provider>. Make sure the"
            " provider name is correct and the package is properly registered and compatible with"
            " your Spark version.",
            "42K02",
            "dependency_error",
        ),
        (
            "[INVALID_EXECUTOR_MEMORY.SYSTEM_MEMORY] Insufficient executor memory: System memory"
            " <systemMemory> must be at least <minSystemMemory>.\nPlease increase heap size using"
            ' the --executor-memory option or "<config>" in Spark configuration.',
            "F0000",
            "framework_config_error",
        ),
        (
            "[FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER] Encountered error while reading file"
            " <path>. Could not read footer. Please ensure that the file is in either ORC or"
            " Parquet format.",
            "KD001",
            "corrupt_or_missing_data",
        ),
        # 3.4 error-classes.json, printed without its name: the executor holding it was lost
        (
            "Checkpoint block <rddBlockId> not found! Either the executor\nthat originally"
            " checkpointed this partition is no longer alive, or the original RDD is\nunpersisted.",
            "LEGACY",
            "peer_process_died",
        ),
        (
            "Could not execute broadcast in <timeout> secs. You can increase the timeout for"
            " broadcasts via <broadcastTimeout> or disable broadcast join by setting"
            " <autoBroadcastJoinThreshold> to -1.",
            "LEGACY",
            "collective_timeout",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(text: str, level: str, failure_class: str) -> None:
    decision = _decide(text, level)
    assert decision.disposition == "mapped"
    assert decision.failure_class == failure_class


@pytest.mark.parametrize(
    ("text", "level"),
    [
        # 4.3: a name in the query that does not resolve
        (
            "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with"
            " name <objectName> cannot be resolved. Did you mean one of the following?"
            " [<proposal>].",
            "42703",
        ),
        ("[PARSE_SYNTAX_ERROR] Syntax error at or near <error><hint>.", "42601"),
        # 3.4: the analyzer's legacy conditions are printed bare
        ("Table <table> does not support <cmd>.", "LEGACY_ANALYSIS"),
    ],
)
def test_the_sql_engine_s_answer_to_a_query_is_not_evidence(text: str, level: str) -> None:
    assert _decide(text, level).disposition == "excluded"


@pytest.mark.parametrize(
    ("text", "level"),
    [
        # 4.3: a value in the data an expression cannot take
        (
            "[CAST_INVALID_INPUT] The value <expression> of the type <sourceType> cannot be cast"
            " to <targetType> because it is malformed.",
            "22018",
        ),
        ("[INTERNAL_ERROR_EXECUTOR] <message>", "XX000"),
        ("[SPARK_JOB_CANCELLED] Job <jobId> cancelled <reason>", "XXKDA"),
    ],
)
def test_a_query_s_data_or_an_internal_error_is_only_a_low_prior(text: str, level: str) -> None:
    decision = _decide(text, level)
    assert decision.disposition == "mapped"
    assert decision.confidence is not None and decision.confidence <= 0.35


def test_a_sql_condition_is_kept_only_for_the_mechanism_its_name_states() -> None:
    # every condition of SQLSTATE class 42 or 0A the catalog keeps was decided by a rule that
    # reads condition names (a path that does not exist, a data source not on the classpath, a
    # Spark configuration refused); the shared text rules and the default take none of them
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    kept = [
        m
        for m in accounting["messages"]
        if m["disposition"] == "mapped" and m["level"][:2] in ("42", "0A")
    ]
    assert {m["function"] for m in kept} >= {"PATH_NOT_FOUND", "DATA_SOURCE_NOT_FOUND"}
    assert all(m["rule"].split(": ", 1)[1].startswith("^\\[") for m in kept), kept
    # the state reader's option checks are the SQL engine's answer, not a checkpoint's fault
    option = "[STDS_INVALID_OPTION_VALUE.IS_EMPTY] Invalid value for source option '<optionName>':"
    assert _decide(option + " cannot be empty.", "42616").disposition == "excluded"


def test_a_healthy_spark_line_is_not_matched(matcher: Matcher) -> None:
    for line in (
        "24/03/02 12:07:31 INFO SparkContext: Running Spark version 3.5.1",
        "24/03/02 12:07:31 INFO SparkContext: Submitted application: xgboost-train",
        "24/03/02 12:08:02 INFO TaskSetManager: Finished task 3.0 in stage 2.0 (TID 5) in 1234 ms"
        " on 10.0.0.5 (executor 1) (4/8)",
        "24/03/02 12:08:05 INFO DAGScheduler: Job 3 finished: collect at XGBoost.scala:418, took"
        " 12.345678 s",
        "24/03/02 12:07:33 INFO BlockManagerInfo: Added broadcast_0_piece0 in memory on"
        " 10.0.0.5:39281 (size: 5.1 KiB, free: 434.4 MiB)",
        "24/03/02 12:07:30 WARN NativeCodeLoader: Unable to load native-hadoop library for your"
        " platform... using builtin-java classes where applicable",
        "24/03/02 12:08:09 INFO FileSourceStrategy: Pushed Filters: IsNotNull(label)",
    ):
        assert not catalog_hits(matcher, line, FAMILY), line


def test_the_extractor_reads_conditions_as_spark_prints_them(tmp_path: Path) -> None:
    path = tmp_path / "common/utils/src/main/resources/error/error-conditions.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        "{\n"
        '  "FAILED_READ_FILE" : {\n'
        '    "message" : [\n'
        '      "Encountered error while reading file <path>."\n'
        "    ],\n"
        '    "subClass" : {\n'
        '      "FILE_NOT_EXIST" : {\n'
        '        "message" : [\n'
        '          "File does not exist.",\n'
        '          "It is possible the underlying files have been updated."\n'
        "        ]\n"
        "      }\n"
        "    },\n"
        '    "sqlState" : "KD001"\n'
        "  },\n"
        '  "PATH_NOT_FOUND" : {\n'
        '    "message" : [\n'
        '      "Path does not exist: <path>."\n'
        "    ],\n"
        '    "sqlState" : "42K03"\n'
        "  },\n"
        '  "NO_STATE" : {\n'
        '    "message" : [\n'
        '      "A condition without a state."\n'
        "    ]\n"
        "  },\n"
        '  "_LEGACY_ERROR_TEMP_1329" : {\n'
        '    "message" : [\n'
        '      "Can not load class <className>, please make sure it is on the classpath."\n'
        "    ]\n"
        "  },\n"
        '  "_LEGACY_ERROR_TEMP_3003" : {\n'
        '    "message" : [\n'
        '      "Could not compute split, block <blockId> of RDD <id> not found"\n'
        "    ]\n"
        "  }\n"
        "}\n"
    )
    found = {(m.function, m.level, m.line, m.style, m.text) for m in extract(tmp_path, "4.3")}
    assert found == {
        (
            "FAILED_READ_FILE.FILE_NOT_EXIST",
            "KD001",
            7,
            "angle",
            "[FAILED_READ_FILE.FILE_NOT_EXIST] Encountered error while reading file <path>. File"
            " does not exist.",
        ),
        ("PATH_NOT_FOUND", "42K03", 16, "angle", "[PATH_NOT_FOUND] Path does not exist: <path>."),
        ("NO_STATE", "NONE", 22, "angle", "[NO_STATE] A condition without a state."),
        (
            "_LEGACY_ERROR_TEMP_1329",
            "LEGACY_ANALYSIS",
            27,
            "angle",
            "Can not load class <className>, please make sure it is on the classpath.",
        ),
        (
            "_LEGACY_ERROR_TEMP_3003",
            "LEGACY",
            32,
            "angle",
            "Could not compute split, block <blockId> of RDD <id> not found",
        ),
    }


def test_the_extractor_finds_the_file_where_each_line_keeps_it(tmp_path: Path) -> None:
    # 3.4 keeps error-classes.json under core/
    path = tmp_path / "core/src/main/resources/error/error-classes.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        '{\n  "PATH_NOT_FOUND" : {\n    "message" : [ "Path does not exist: <path>." ]\n  }\n}\n'
    )
    (message,) = extract(tmp_path, "3.4")
    assert (message.file, message.line, message.level) == (
        "core/src/main/resources/error/error-classes.json",
        2,
        "NONE",
    )


def test_the_catalog_reads_the_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["3.4", "3.5", "4.3"]
    assert all(row["found"] > 900 for row in accounting["releases"])
