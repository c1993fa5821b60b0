"""The LLM step's settings: a deadline, the answer budget, the server's token count, the prompt's
stable prefix, and no API key for a server on this machine."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from denpex.hybrid.chat import LOCAL_KEY, LiteLLMChat, is_local
from denpex.hybrid.settings import LLMSettings
from denpex.models import Source
from denpex.pipeline import diagnose
from tests.hybrid.chat_server import ChatServer, Scripted
from tests.hybrid.support import answering_path, case_inputs, unsettled_matcher
from tests.hybrid.test_llm_http import MODEL, reply, user_prompt, valid


@pytest.fixture
def server() -> Iterator[ChatServer]:
    running = ChatServer().start()
    yield running
    running.stop()


def chat(server: ChatServer, **settings: object) -> LiteLLMChat:
    return LiteLLMChat(LLMSettings(model=MODEL, api_base=server.api_base, **settings))  # type: ignore[arg-type]


def run(indexed, chat_model: LiteLLMChat, case: str = "ckpt-size"):  # type: ignore[no-untyped-def]
    recorder, cases = indexed
    path = answering_path(recorder, chat=chat_model, exclude=[cases[case].incident_id])
    return path, diagnose(case_inputs(case), matcher=unsettled_matcher(), hybrid=path)


def test_a_server_on_this_machine_needs_no_api_key(indexed, server, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.script = [Scripted(valid)]
    _, diagnosis = run(indexed, chat(server, api_key=None))
    assert diagnosis.root_causes[0].source is Source.llm
    sent = {name.lower(): value for name, value in server.headers[0].items()}
    assert sent["authorization"] == f"Bearer {LOCAL_KEY}"
    assert is_local("http://127.0.0.1:8080/v1") and is_local("localhost:11434")
    assert not is_local("https://api.openai.com/v1")


def test_the_answer_budget_is_a_setting(indexed, server) -> None:
    server.script = [Scripted(valid)]
    run(indexed, chat(server, api_key="k", max_answer_tokens=700))
    assert server.requests[0]["max_tokens"] == 700


def test_the_stable_part_of_the_prompt_comes_first(indexed, server) -> None:
    server.script = [Scripted(valid), Scripted(valid)]
    run(indexed, chat(server, api_key="k"))
    run(indexed, chat(server, api_key="k"))
    first, second = (r["messages"][0]["content"] for r in server.requests)
    assert first != second  # each prompt has its own nonce ...
    shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    # ... which comes after the instructions, the taxonomy and the answer format.
    assert shared > 0.8 * len(first)
    assert "checkpoint_mismatch" in first[:shared] and '"root_causes"' in first[:shared]


def cite_first_line(messages: list[dict[str, str]]) -> str:
    first = re.search(r"^(L\d+) \|", user_prompt(messages), re.MULTILINE)
    assert first is not None
    return reply("checkpoint_mismatch", [first.group(1)])


def test_the_servers_token_count_rebudgets_the_repair(indexed, server) -> None:
    server.script = [Scripted(valid)]
    path, _ = run(indexed, chat(server, api_key="k"))
    tokens = path.counter.count_messages(server.requests[0]["messages"])
    # The server counts twice what the local tokenizer does, and the context has room for the
    # first prompt but not for it twice over: the repair request is rendered smaller to fit.
    tight = chat(server, api_key="k", context_tokens=int(tokens * 1.8) + 500, max_answer_tokens=500)
    server.script = [
        Scripted(lambda _: "not JSON", prompt_tokens=2 * tokens),
        Scripted(cite_first_line),
    ]
    path, diagnosis = run(indexed, tight)
    assert path.token_ratio == pytest.approx(2.0, rel=0.05)
    first, repair = server.requests[-2]["messages"], server.requests[-1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "not JSON"}
    assert len(repair[1]["content"]) < len(first[1]["content"])
    assert path.counter.count_messages(repair) * path.token_ratio <= tight.prompt_budget()
    assert diagnosis.root_causes[0].source is Source.llm


def test_the_deadline_bounds_the_whole_llm_step(indexed, server) -> None:
    server.script = [Scripted(valid, delay_s=40.0)]
    started = time.monotonic()
    _, diagnosis = run(indexed, chat(server, api_key="k", timeout_s=120.0, deadline_s=2.0))
    assert time.monotonic() - started < 30.0  # the request's own timeout would be 120 s
    assert diagnosis.root_causes[0].source is not Source.llm
    assert any("LLM step skipped" in w for w in diagnosis.warnings)
