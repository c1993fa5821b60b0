"""The torch-side extractors find what PyTorch prints, read from the installed torch itself.

The inputs are the torch package this project runs on (its Python modules and its shipped
`libtorch_cpu.so`), so every text asserted below is one the installed PyTorch really prints.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from catalogs.cppsource import macro_messages
from catalogs.pysource import messages_in_file
from catalogs.sostrings import fragments, is_message

TORCH_ROOT = Path(torch.__file__).resolve().parents[1]
LIBTORCH_CPU = TORCH_ROOT / "torch" / "lib" / "libtorch_cpu.so"


def _found(path: str, include_info: bool = False) -> dict[str, tuple[str, str]]:
    messages = messages_in_file(TORCH_ROOT / path, path, include_info)
    return {m.text: (m.style, m.level) for m in messages}


def test_a_logger_warning_keeps_its_printf_format_and_level() -> None:
    found = _found("torch/distributed/elastic/multiprocessing/api.py")
    assert found["Sending process %s closing signal %s"] == ("printf", "WARNING")


def test_a_raised_fstring_keeps_literal_parts_and_writes_each_expression() -> None:
    found = _found("torch/utils/data/dataloader.py")
    assert found["DataLoader timed out after {self._timeout} seconds"] == (
        "fstring",
        "RuntimeError",
    )


def test_info_lines_are_read_only_when_asked() -> None:
    restart = "[%s] Worker group %s. %s/%s attempts left; will restart worker group"
    assert restart not in _found("torch/distributed/elastic/agent/server/api.py")
    assert _found("torch/distributed/elastic/agent/server/api.py", include_info=True)[restart] == (
        "printf",
        "INFO",
    )


def test_a_helper_that_raises_for_its_caller_is_read_like_a_raise_when_named() -> None:
    # DDP raises its usage errors through self._log_and_throw(ValueError, "...")
    path = "torch/nn/parallel/distributed.py"
    text = "device_ids can only be None or contain a single element."
    assert text not in _found(path)
    found = messages_in_file(TORCH_ROOT / path, path, throwers={"_log_and_throw": (0, 1)})
    assert {m.text: m.level for m in found}[text] == "ValueError"


def test_a_message_built_in_a_variable_is_resolved_to_its_text() -> None:
    # distributed_c10d.py builds the store-barrier timeout text before raising it
    found = _found("torch/distributed/distributed_c10d.py")
    assert any(
        text.startswith("Timed out initializing process group in store based barrier")
        for text in found
    )


def test_macro_pieces_join_with_a_placeholder_per_expression_and_skip_the_condition() -> None:
    source = 'void f() {\n  GLOO_ENFORCE_EQ(a, b, "Read error ", peer_.str(), ": ", err);\n}\n'
    (message,) = macro_messages(source, {"GLOO_ENFORCE_EQ": 2})
    assert (message.text, message.style, message.line) == ("Read error {}: {}", "brace", 2)


def test_a_macro_body_keeps_the_literal_after_a_stringized_parameter() -> None:
    # oneCCL src/atl/ofi/atl_ofi_helper.hpp: the failed call's text, then the literal pieces
    source = (
        "#define ATL_OFI_CALL(func, ret_val, err_action) \\\n"
        "    do { \\\n"
        "        if ((ret_val) != FI_SUCCESS) { \\\n"
        "            LOG_ERROR( \\\n"
        '                #func "\\n fails with ret: ", ret_val, ", strerror: ", x); \\\n'
        "        } \\\n"
        "    } while (0)\n"
    )
    (message,) = macro_messages(source, {"LOG_ERROR": 0})
    assert (message.text, message.style) == ("{}\n fails with ret: {}, strerror: {}", "brace")


def test_a_commented_out_macro_call_is_not_a_message() -> None:
    source = '// GLOO_ERROR_MSG("Socket closed ", peer_.str());\n'
    assert macro_messages(source, {"GLOO_ERROR_MSG": 0}) == []


@pytest.mark.skipif(not LIBTORCH_CPU.is_file(), reason="torch ships no libtorch_cpu.so here")
def test_library_pieces_of_c10d_keep_fmt_texts_whole_and_name_their_unit() -> None:
    found = {f.text: f for f in fragments(LIBTORCH_CPU, ("torch/csrc/distributed/c10d/",))}
    timeout = found["wait timeout after {}ms, keys: {}"]
    assert (timeout.style, timeout.file) == ("brace", "torch/csrc/distributed/c10d/TCPStore.cpp")
    assert found["Detected mismatch between collectives on ranks. Rank "].style == "literal"


def test_symbols_and_keys_are_not_taken_for_messages() -> None:
    assert not is_message("_ZN4c10d16ProcessGroupNCCL5abortEv")
    assert not is_message("TORCH_NCCL_ASYNC_ERROR_HANDLING")
    assert is_message(" milliseconds before timing out.")
