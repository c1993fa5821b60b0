"""Parsing the model's reply and holding it to the lines it was shown."""

from __future__ import annotations

import json

import pytest

from denpex.hybrid.llm_answer import AnswerError, check_answer, parse_answer
from denpex.hybrid.redact import Redactor
from denpex.models import Source
from denpex.store.records import ExcerptLine

SHOWN = {
    "L1": ExcerptLine(
        source="logs/launcher.log",
        line=23,
        rank=1,
        text="[default1]:[rank1]: KeyError: 'label'",
        template="KeyError: 'label'",
        role="root_cause",
        signature_id="python.uncaught_exception",
    ),
    "L2": ExcerptLine(
        source="logs/launcher.log",
        line=35,
        rank=0,
        text="[default0]:[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/"
        "transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:4520.",
        template="RuntimeError: [<PATH>:<NUM>] Connection closed by peer <IP>.",
        role="symptom",
    ),
}


def answer(**cause: object) -> str:
    base = {"failure_class": "python_exception", "confidence": 0.7, "title": "KeyError"}
    return json.dumps({"summary": "s", "root_causes": [{**base, **cause}]})


def test_a_fenced_reply_with_extra_keys_parses_to_the_known_fields() -> None:
    reply = "```json\n" + answer(evidence=["L1"], mood="sure") + "\n```"
    parsed = parse_answer(reply)
    assert parsed.root_causes[0].evidence == ["L1"]
    assert not hasattr(parsed.root_causes[0], "mood")


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("I think it is a KeyError.", "holds no JSON object"),
        ('{"summary": "s", "root_causes": [}', "does not parse"),
        (answer(failure_class="cosmic_rays"), "not one of the failure classes"),
        (answer(confidence=3), "less than or equal to 1"),
        (json.dumps({"summary": "s", "root_causes": []}), "root_causes"),
    ],
)
def test_an_unusable_reply_says_why(reply: str, problem: str) -> None:
    with pytest.raises(AnswerError, match=problem):
        parse_answer(reply)


def test_citations_by_id_or_by_quote_are_kept_and_others_counted() -> None:
    parsed = parse_answer(
        answer(evidence=["L1", "[L2]", "KeyError: 'label'", "L7", "RuntimeError: boom"])
    )
    checked = check_answer(parsed, SHOWN, Redactor())
    cause = checked.causes[0]
    assert (cause.source, cause.best_effort, cause.signature_id) == (Source.llm, True, None)
    assert [e.line for e in cause.evidence] == [23, 35]
    assert "2 line(s) that do not exist in the input" in cause.caveat
    assert checked.notes == [
        "the model cited 2 line(s) for cause 1 (python_exception) that are not in the input; "
        "they were dropped"
    ]


def test_a_cause_without_any_real_line_is_dropped() -> None:
    checked = check_answer(parse_answer(answer(evidence=["L9"])), SHOWN, Redactor())
    assert checked.causes == []
    assert "cited no line of the input" in checked.notes[-1]


def test_a_rank_the_cited_lines_do_not_show_is_not_claimed() -> None:
    supported = check_answer(
        parse_answer(answer(evidence=["L1"], originating_rank=1)), SHOWN, Redactor()
    )
    assert supported.causes[0].originating_rank == 1
    unsupported = check_answer(
        parse_answer(answer(evidence=["L1"], originating_rank=5, originating_host="gpu-9")),
        SHOWN,
        Redactor(),
    )
    cause = unsupported.causes[0]
    assert (cause.originating_rank, cause.originating_host) == (None, None)
    assert any("rank 5 is not shown" in n for n in unsupported.notes)
    assert any("host gpu-9 is not shown" in n for n in unsupported.notes)


def test_placeholders_in_the_answer_are_restored() -> None:
    redactor = Redactor(hosts=["gpu-042"])
    redactor.redact("on gpu-042")
    reply = answer(evidence=["L1"], next_steps=["drain <<HOST_1>>"], title="bad data on <<HOST_1>>")
    cause = check_answer(parse_answer(reply), SHOWN, redactor).causes[0]
    assert cause.next_steps == ["drain gpu-042"]
    assert cause.title == "bad data on gpu-042"
