"""Format strings from emitters' source become patterns that match what the emitter prints.

Every format below is copied from the program that prints it (file named beside it); the lines
are what that format prints with the values shown.
"""

from __future__ import annotations

import re

import pytest

from catalogs.core.pattern import (
    TOO_GENERIC,
    NameRule,
    Unsafe,
    compile_problems,
    convert,
    opening,
    parse,
    shared_part,
    shared_pattern,
)
from catalogs.core.render import render_message, value_rules
from denpex.signatures.keywords import required_literals


def _search(regex: str, line: str) -> re.Match[str] | None:
    return re.search(regex, line, re.ASCII)


def test_printf_literal_text_stays_literal_and_numbers_become_captures() -> None:
    # nccl src/bootstrap.cc
    converted = convert("Message truncated : received %d bytes instead of %d", "printf")
    line = (
        "gpu-001:20315:20402 [0] bootstrap.cc:224 NCCL WARN "
        "Message truncated : received 4352 bytes instead of 4096"
    )
    found = _search(converted.regex, line)
    assert found is not None
    assert found.group("bytes") == "4352"  # "%d bytes" names its value
    assert converted.regex.startswith("Message truncated")  # the trailing %d is trimmed
    assert _search(converted.regex, line.replace("truncated", "truncatd")) is None


def test_printf_regex_metacharacters_in_the_format_are_escaped() -> None:
    # nccl src/transport/net_ib.cc (2.18)
    text = (
        "NET/IB : Got completion from peer %s with error %d, opcode %d, len %d, vendor err %d (%s)"
    )
    converted = convert(text, "printf")
    line = (
        "node7:1834:1990 [3] transport/net_ib.cc:1298 NCCL WARN NET/IB : Got completion from peer "
        "10.0.3.17<50213> with error 12, opcode 0, len 0, vendor err 129 (Send)"
    )
    assert _search(converted.regex, line)
    assert "\\(" in converted.regex and "\\." not in converted.regex
    assert _search(converted.regex, line.replace("(Send)", "(Recv)"))  # trailing %s trimmed
    assert not _search(converted.regex, line.replace("err 129", "err x"))


def test_length_modifiers_precision_and_pointers() -> None:
    # nccl src/misc/... "invalid pointer %p / size %zu" and a %.*s from nccl's param parsing
    converted = convert("invalid pointer %p / size %zu", "printf")
    assert _search(converted.regex, "invalid pointer 0x7f3a2c000000 / size 1048576")
    assert _search(converted.regex, "invalid pointer (nil) / size 0")
    assert not _search(converted.regex, "invalid pointer buff / size 1048576")
    assert converted.regex.endswith("size")  # the trailing %zu is trimmed
    precision = convert("Invalid value %.*s for NCCL_PROTO", "printf")
    assert _search(precision.regex, "Invalid value LL128x for NCCL_PROTO")


def test_quoted_string_placeholder_stops_at_the_quote() -> None:
    # nccl src/include/checks.h CUDACHECK: too generic alone, matched after NCCL's prefix
    converted = convert("Cuda failure '%s'", "printf", anchor="NCCL WARN ")
    assert converted.regex.startswith("NCCL WARN Cuda failure '")
    assert "[^'\\n]*" in converted.regex
    assert _search(converted.regex, "NCCL WARN Cuda failure 'out of memory'")
    assert _search(converted.regex, "NCCL WARN Cuda failure ''")


def test_percent_percent_is_a_literal_percent() -> None:
    converted = convert("GPU memory usage is above 95%% of %lu bytes", "printf")
    assert _search(converted.regex, "GPU memory usage is above 95% of 1073741824 bytes")


def test_too_generic_messages_are_refused() -> None:
    for text in ("%s", "failed: %s", "%s:%d -> %d", "Error %d", "close failed: %s"):
        with pytest.raises(Unsafe, match=TOO_GENERIC):
            convert(text, "printf")
    for text in ("%s", "%s:%d -> %d"):
        with pytest.raises(Unsafe, match=TOO_GENERIC):
            convert(text, "printf", anchor="NCCL WARN ")


def test_a_short_message_is_matched_after_its_emitters_prefix() -> None:
    # nccl src/os/linux_socket_pair.cc
    converted = convert("close failed: %s", "printf", anchor="NCCL WARN ")
    assert converted.regex == "NCCL WARN close failed:"
    # a leading placeholder stays when the prefix comes before it (nccl src/misc/socket.cc)
    converted = convert("%s: Connect to %s failed : %s", "printf", anchor="NCCL WARN ")
    line = "gpu-017:20315:20402 [3] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
    assert _search(converted.regex, line + "10.12.3.7<43521> failed : Connection refused")


def test_python_brace_format_and_named_fields() -> None:
    # torch/distributed/elastic/agent/server/api.py
    text = (
        "[{role}] Worker group {state}. {remaining}/{max_restarts} attempts left;"
        " will restart worker group"
    )
    converted = convert(text, "brace")
    line = "[default] Worker group FAILED. 2/3 attempts left; will restart worker group"
    assert _search(converted.regex, line)
    assert parse("{{literal}} {0:x}", "brace")[0] == "{literal} "


def test_python_fstring_with_expressions_conversions_and_specs() -> None:
    # torch/distributed/distributed_c10d.py style f-string with attribute and format spec
    text = "Rank {self.rank} timed out after {timeout.total_seconds():.1f}s waiting for {key!r}"
    converted = convert(text, "fstring")
    found = _search(
        converted.regex, "Rank 3 timed out after 1800.0s waiting for 'store_based_barrier_key:1'"
    )
    assert found is not None
    # the f-string field `self.rank` is named rank; rank names are kept only when known
    assert converted.captures == ()


def test_fmt_style_hex_and_rank_capture() -> None:
    # A {fmt} message as vLLM / c10d C++ print it
    converted = convert("rank {} failed to map buffer at {:x} on device {}", "fmt")
    found = _search(converted.regex, "rank 7 failed to map buffer at 7f3a2c000000 on device 2")
    assert found is not None
    assert found.group("pg_rank") == "7"


def test_spark_angle_placeholders_become_string_values() -> None:
    # Apache Spark 4.x common/utils/src/main/resources/error/error-conditions.json, printed after
    # its condition's name; any `<` that is not a parameter name stays literal text
    text = "[PATH_NOT_FOUND] Path does not exist: <path>."
    pieces = parse(text, "angle")
    assert [p if isinstance(p, str) else p.spec for p in pieces] == [
        "[PATH_NOT_FOUND] Path does not exist: ",
        "<path>",
        ".",
    ]
    converted = convert(text, "angle")
    line = "org.apache.spark.sql.AnalysisException: [PATH_NOT_FOUND] Path does not exist: "
    assert _search(converted.regex, line + "hdfs://nn:8020/data/train.parquet. SQLSTATE: 42K03")
    assert parse("a <= b <not a name> <x-y_1>", "angle")[-1].spec == "<x-y_1>"  # type: ignore[union-attr]
    assert parse("a <= b <not a name>", "angle") == ["a <= b <not a name>"]


def test_literal_messages_are_escaped_whole() -> None:
    # nccl src/bootstrap.cc
    converted = convert("Bootstrap : no socket interface found", "literal")
    assert converted.regex == "Bootstrap : no socket interface found"
    assert required_literals(converted.regex)


def test_multiline_messages_keep_their_most_distinctive_line() -> None:
    converted = convert("NCCL error in: %s:%d, %s\nunhandled cuda error, NCCL version %s", "printf")
    assert "\\n" not in converted.regex
    assert _search(converted.regex, "unhandled cuda error, NCCL version 2.18.3")


def test_a_multiline_message_is_matched_by_its_opening_line_as_well() -> None:
    # ompi orte/mca/rmaps/base/help-orte-rmaps-base.txt (v4.1.8), the start of alloc-error
    text = (
        "There are not enough slots available in the system to satisfy the %d\n"
        "slots that were requested by the application:\n\n  %s\n\n"
        "Either request fewer slots for your application, or make more slots\n"
        "available for use.\n\n"
        "In all the above cases, if you want Open MPI to default to the number\n"
        "of hardware threads instead of the number of processor cores, use the"
    )
    first = opening(text, "printf")
    assert first is not None
    # Open MPI 4.0 wraps the same text elsewhere; its first line still matches.
    assert _search(
        first.regex, "There are not enough slots available in the system to satisfy the 2 slots "
    )
    assert not _search(convert(text, "printf").regex, "There are not enough slots available")


def test_a_message_whose_opening_line_is_its_pattern_or_too_generic_has_no_other() -> None:
    assert opening("Message truncated : received %d bytes instead of %d", "printf") is None
    assert (
        opening("Error:\nThe communicator could not be created on any of the %d devices", "printf")
        is None
    )


def test_characters_beyond_ascii_are_matched_as_the_text_prints_them() -> None:
    # megatron/core/inference: the em dash is in the format itself
    text = "request %d has been deferred by CG-aware admission for %d steps — possible starvation"
    converted = convert(text, "printf")
    line = "request 12 has been deferred by CG-aware admission for 40 steps — possible starvation"
    assert compile_problems([converted.regex]) == {}
    assert _search(converted.regex, line)
    assert re.search(converted.regex.encode(), line.encode())


def test_every_converted_pattern_compiles_in_both_backends() -> None:
    texts = [
        "NET/IB : Got completion from peer %s with error %d, opcode %d, len %d, vendor err %d (%s)",
        "Call to ibv_create_qp failed with error %s errno %d",
        "NET/Socket : Connect to %s failed : %s",
        "Error : ring %d does not loop back to start (%d != %d)",
    ]
    regexes = [convert(text, "printf").regex for text in texts]
    assert compile_problems(regexes) == {}


def test_rendered_example_matches_its_own_pattern_with_realistic_values() -> None:
    # nccl src/transport/shm.cc
    converted = convert("Error while creating shared memory segment %s (size %d)", "printf")
    text, captures = render_message(converted.line, value_rules())
    assert text == "Error while creating shared memory segment /dev/shm/nccl-4bVQ1y (size 12)"
    assert _search(converted.regex, text)
    # nccl src/transport/net_ib.cc: a peer's address after "peer", numbers by conversion
    converted = convert("NET/IB : Got completion from peer %s with error %d", "printf")
    text, _ = render_message(converted.line, value_rules())
    assert text == "NET/IB : Got completion from peer 10.12.3.7<43521> with error 12"
    # the emitter's own values come first
    rules = value_rules(
        [{"after": r"Cuda failure '$", "value": "an illegal memory access was encountered"}]
    )
    text, _ = render_message(convert("Cuda failure '%s'", "printf", anchor="W ").line, rules)
    assert text == "Cuda failure 'an illegal memory access was encountered'"
    assert captures == {}


def test_an_anchor_regex_also_accepts_the_prefix_without_the_emitters_name() -> None:
    # nccl src/os/linux_socket_pair.cc; some builds print "WARN" without "NCCL " after the
    # same "[dev] file:line " prefix
    anchor_regex = r"(?:NCCL |\[\d{1,5}\] [^ ]+:\d+ )WARN "
    converted = convert(
        "close failed: %s", "printf", anchor="NCCL WARN ", anchor_regex=anchor_regex
    )
    assert converted.regex == anchor_regex + "close failed:"
    assert converted.pieces == ("NCCL WARN close failed:",)  # titles keep the literal prefix
    assert _search(converted.regex, "gpu-017:20315:20402 [3] NCCL WARN close failed: Bad fd")
    assert _search(converted.regex, "e66aa18dc444:3171:3171 [0] os/x.cc:12 WARN close failed: x")
    assert not _search(converted.regex, "12:00:01 WARN close failed: x")


def test_two_wordings_share_the_words_both_print() -> None:
    # nccl src/include/socket.h (v2.4.8-1) and src/misc/socket.cc (v2.18.6-1): only the
    # leading tag changed
    old = convert("Net : Socket creation failed : %s", "printf")
    new = convert("ncclSocketInit: Socket creation failed : %s", "printf")
    shared = shared_pattern([old, new], 0.5)
    assert shared.regex == "Socket creation failed :"
    for line in (
        "[0] include/socket.h:322 NCCL WARN Net : Socket creation failed : Bad address",
        "[0] misc/socket.cc:723 NCCL WARN ncclSocketInit: Socket creation failed : Bad address",
        "[0] include/socket.h:311 WARN Socket creation failed : Address family not supported",
    ):
        assert _search(shared.regex, line)
    # nccl src/misc/ipcsocket.cc, 2.18 and 2.19: the older wording is inside the newer one
    grown = shared_pattern(
        [
            convert("UDS: Socket creation error : %d", "printf"),
            convert("UDS: Socket creation error : %s (%d)", "printf"),
        ],
        0.5,
    )
    assert grown.regex == "UDS: Socket creation error"


def test_different_messages_that_share_words_are_not_one_message() -> None:
    # nccl src/transport/net_ib.cc (2.18) and net_ib/init.cc (2.21): "port" is not a whole
    # word of "port_num", and a pattern cut before it would match "Unable to query device"
    cut = shared_part(
        convert("NET/IB : Unable to query port %d", "printf").line,
        convert("NET/IB : Unable to query port_num %d", "printf").line,
    )
    assert cut.pieces == ["NET/IB : Unable to query"] and not cut.reworded
    for first, second in (
        # nccl src/graph/xml.cc: they differ at both ends
        (
            "Add C2c error : could not find DEV for GPU %s",
            "Add NVLink error : could not find GPU %lx",
        ),
        # torch 2.13 libtorch_cpu.so: pieces streamed after a backend's name
        (" does not support allocateTensor", " does not support complex tensors"),
        # torch 2.7 and 2.13: two TORCH_CHECKs sharing only the check's boilerplate
        (
            "Expected group_info_map.find(group_name) == group_info_map.end() to be true, but "
            "got false.  (Could this error message be improved?  If so, please report an "
            "enhancement request to PyTorch.)",
            "Expected it != reset_epoch_start_idx_.end() to be true, but got false.  (Could "
            "this error message be improved?  If so, please report an enhancement request to "
            "PyTorch.)",
        ),
    ):
        with pytest.raises(Unsafe, match="not one reworded"):
            wordings = [convert(t, "printf" if "%" in t else "literal") for t in (first, second)]
            shared_pattern(wordings, 0.5)


def test_a_shared_part_too_generic_alone_is_refused() -> None:
    # nccl 2.10 src/include/socket.h and 2.18 src/misc/socket.cc
    old = convert("Net : Connect to %s failed : %s", "printf")
    new = convert("%s: Connect to %s failed : %s", "printf", anchor="NCCL WARN ")
    with pytest.raises(Unsafe, match=TOO_GENERIC):
        shared_pattern([old, new], 0.5)


# Accelerate 1.x's wording; LLaMA-Factory#9 and qlora#137 pasted only its first sentence.
EIGHT_BIT = (
    "You can't train a model that has been loaded in 8-bit precision on a different device "
    "than the one you're training on. Make sure you loaded the model on the correct device "
    "using for example `device_map={'':torch.cuda.current_device()}`"
)


def test_a_message_of_several_sentences_is_matched_by_its_first() -> None:
    regex = convert(EIGHT_BIT, "literal").regex
    cut = "ValueError: You can't train a model that has been loaded in 8-bit precision on a "
    assert re.search(regex, cut + "different device than the one you're training on.")
    assert re.search(regex, "ValueError: " + EIGHT_BIT)
    assert "Make sure" not in regex


def test_wordings_that_share_several_sentences_are_matched_by_the_first() -> None:
    # Accelerate 0.18's and 0.34's wordings share both sentences up to the device example.
    old = convert(EIGHT_BIT, "literal")
    new = convert(EIGHT_BIT + " or `device_map={'':torch.xpu.current_device()}`", "literal")
    regex = shared_pattern([old, new], 0.5).regex
    assert "Make sure" not in regex
    assert re.search(regex, "ValueError: " + EIGHT_BIT.split(". Make")[0] + ".")


# Accelerate 0.18-0.19; firefly#18 quoted it without its full stop.
ON_MANY_DEVICES = (
    "You can't train a model that has been loaded in 8-bit precision on multiple devices."
)


def test_a_closing_full_stop_may_be_left_out_but_the_line_must_end_there() -> None:
    regex = convert(ON_MANY_DEVICES, "literal").regex
    assert re.search(regex, "ValueError: " + ON_MANY_DEVICES)
    assert re.search(regex, "ValueError: " + ON_MANY_DEVICES.rstrip("."))
    # Accelerate 0.20's longer message is another: it does not end there.
    longer = ON_MANY_DEVICES.rstrip(".") + " in any distributed mode."
    assert not re.search(regex, "ValueError: " + longer)


def test_a_first_sentence_too_short_to_stand_alone_keeps_the_message_whole() -> None:
    # NCCL's src/allocator.cc.
    text = "Allocation failed. No suitable space found to accommodate size=0x%lx within limit=0x%lx"
    assert "accommodate" in convert(text, "printf").regex


# Open MPI opal/util/stacktrace.c (v4.1.8): HOSTFORMAT "[%s:%05d] " before each line of the block.
_HOST = NameRule(re.compile(r"^\[$"), re.compile(":"), "host", r"[^\s\[\]:]+", "gpu-node-017")
_PID = NameRule(re.compile(r"^\[%s:$"), re.compile(r"\] "), "pid")
_SIGNAL = NameRule(re.compile(r"Signal: $"), re.compile(r" \("), "signal", "", "Aborted")
_SIGNAL_NUMBER = NameRule(re.compile(r"Signal: %s \($"), None, "signal_number", "", "6")


def test_placeholders_no_word_names_are_named_by_the_text_around_them() -> None:
    names = (_HOST, _PID, _SIGNAL, _SIGNAL_NUMBER)
    received = convert("[%s:%05d] *** Process received signal ***", "printf", names=names)
    assert received.captures == ("host", "pid")
    found = _search(
        received.regex, "[1,3]<stderr>:[rack1-93-slot7:186363] *** Process received signal ***"
    )
    assert found and found["host"] == "rack1-93-slot7" and found["pid"] == "186363"
    # one word: Open MPI's source.yaml lets the signal handler's lines, all of that shape, have one
    signal = convert("[%s:%05d] Signal: %s (%d)", "printf", names=names, min_words=1)
    assert signal.captures == ("host", "pid", "signal", "signal_number")
    found = _search(signal.regex, "[rack1-93-slot7:186363] Signal: Aborted (6)")
    assert found and (found["signal"], found["signal_number"]) == ("Aborted", "6")
    text, captures = render_message(signal.line, value_rules())
    assert text == "[gpu-node-017:20315] Signal: Aborted (6)"
    assert captures["host"] == "gpu-node-017"
    # "Signal code: %s (%d)" is another value: the rule for the signal's number does not name it
    code = convert("[%s:%05d] Signal code: %s (%d)", "printf", names=names, min_words=1)
    assert code.captures == ("host", "pid")
