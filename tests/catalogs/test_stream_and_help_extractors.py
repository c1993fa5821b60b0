"""The C++ stream reader and the show-help reader find each message the way the program prints it.

The snippets below are written for these tests in the shapes Horovod's C++ core (`LOG(...) <<`
streams, `Status::...Error("..." + x)`, a report built in a stringstream) and Open MPI's help files
(`[topic]` sections with printf placeholders, `#` comments) use; they are not copied from either.
"""

from __future__ import annotations

from pathlib import Path

from catalogs.cppstreams import (
    bare_stream_messages,
    coded_messages,
    concat_messages,
    sink_messages,
    stream_messages,
)
from catalogs.helpfiles import help_messages, topics

STREAMS = """
void Loop() {
  // LOG(ERROR) << "commented out, not printed";
  LOG(ERROR) << "Background loop failed: " << e.what();
  LOG(WARNING, rank) << "Rank " << rank << " is slow" << std::endl << "Waiting.";
  LOG(DEBUG) << "progress " << step;
  LOG(INFO);
}
"""


def test_a_log_stream_keeps_its_literals_and_writes_each_expression_as_a_placeholder() -> None:
    found = {m.text: m for m in stream_messages(STREAMS)}
    assert set(found) == {
        "Background loop failed: {}",
        "Rank {} is slow\nWaiting.",
        "progress {}",
    }
    assert found["Background loop failed: {}"].level == "ERROR"
    assert found["Background loop failed: {}"].style == "brace"
    assert found["Rank {} is slow\nWaiting."].level == "WARNING"
    assert found["Background loop failed: {}"].function == "Loop"


def test_an_error_built_by_concatenation_keeps_its_literal_pieces() -> None:
    src = """
const Status GONE = Status::UnknownError(
    "The group has shut down. "
    "See the first error above.");
Status Check(int r) {
  if (r < 0) return Status::InvalidArgument("Rank " + std::to_string(r) + " is not in the set.");
  throw std::runtime_error(std::string("Plain text, no placeholders."));
  return Status::Aborted(reason);
}
"""
    found = {
        (m.level, m.text, m.style)
        for m in concat_messages(
            src,
            (
                "Status::UnknownError",
                "Status::InvalidArgument",
                "Status::Aborted",
                "std::runtime_error",
            ),
        )
    }
    assert found == {
        ("UnknownError", "The group has shut down. See the first error above.", "literal"),
        ("InvalidArgument", "Rank {} is not in the set.", "brace"),
        ("runtime_error", "Plain text, no placeholders.", "literal"),
    }


def test_a_report_built_in_a_stringstream_gives_one_message_per_statement() -> None:
    src = """
  std::stringstream message;
  message << "Some tensors are waiting for more than " << secs << " seconds." << std::endl
          << "Missing ranks:";
  message << std::endl << ranks[0] << ": [" << name << "]";
  message << std::endl << "Ranks marked \\"!\\" stalled; shutting down.";
  other.message << "not this sink";
"""
    texts = [m.text for m in sink_messages(src, ("message",), "WARNING")]
    assert texts == [
        "Some tensors are waiting for more than {} seconds.\nMissing ranks:",
        "{}: [{}]",
        'Ranks marked "!" stalled; shutting down.',
    ]


HELP = """# -*- text -*-
# This is the help file of a launcher.
#
[launcher:non-zero-exit]
%s detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: %s
  Exit code:    %d
#
[usage]

%s [OPTION]...  PROGRAM

#include#help-other#usage-details
[empty-topic]
#
"""


def test_each_help_topic_is_its_text_without_comments_or_surrounding_blank_lines() -> None:
    found = list(topics(HELP))
    assert [t.name for t in found] == ["launcher:non-zero-exit", "usage"]
    assert found[0].line == 4
    assert found[0].text == (
        "%s detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n"
        "\n"
        "  Process name: %s\n"
        "  Exit code:    %d"
    )
    assert found[1].text == "%s [OPTION]...  PROGRAM"


def test_help_files_and_clean_output_banners_are_read_under_the_roots(tmp_path: Path) -> None:
    tools = tmp_path / "orte" / "tools"
    tools.mkdir(parents=True)
    (tools / "help-launcher.txt").write_text(HELP)
    (tools / "connect.c").write_text(
        "void fail(void) {\n"
        "    opal_output(orte_clean_output,\n"
        '                "A daemon could not connect\\n"\n'
        '                "  Remote host:   %s\\n", host);\n'
        '    opal_output(0, "debug chatter %d", n);\n'
        "}\n"
    )
    (tools / "notes.txt").write_text("[not-a-help-file]\ntext\n")
    messages = help_messages(tmp_path, "4.1", "openmpi", ("orte", "opal"))
    by_level = {(m.level, m.function or m.file): m for m in messages}
    assert set(by_level) == {
        ("HELP", "launcher:non-zero-exit"),
        ("HELP", "usage"),
        ("OUTPUT", "orte/tools/connect.c"),
    }
    banner = by_level[("OUTPUT", "orte/tools/connect.c")]
    assert banner.text == "A daemon could not connect\n  Remote host:   %s"
    assert banner.style == "printf" and banner.line == 2
    assert by_level[("HELP", "usage")].file == "orte/tools/help-launcher.txt"


# the shapes Triton's server and core use: a stream macro with no arguments, and an error built
# from a code and a concatenation (written for these tests, not copied)
TRITON = """
Status Load() {
  LOG_ERROR << "failed to load '" << name << "' version " << version << ": " << status.AsString();
  LOG_INFO << "loading: " << name;
  return Status(
      Status::Code::INVALID_ARG,
      "unable to find backend library '" + libname + "' for model '" + name + "'");
}
TRITONSERVER_Error* Open() {
  return TRITONSERVER_ErrorNew(
      TRITONSERVER_ERROR_INTERNAL,
      std::string("Unable to open shared memory region: '" + shm_key + "'").c_str());
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, err.c_str());
}
"""


def test_a_bare_stream_macro_is_read_at_the_level_it_names() -> None:
    found = bare_stream_messages(TRITON, {"LOG_ERROR": "ERROR"})
    assert [(m.text, m.level, m.function) for m in found] == [
        ("failed to load '{}' version {}: {}", "ERROR", "Load")
    ]


def test_an_error_built_from_a_code_and_a_concatenation_keeps_the_code_as_its_level() -> None:
    code = r"(?:(?:\w+::)*Code::|TRITONSERVER_ERROR_)([A-Z_]+)"
    found = coded_messages(TRITON, ("Status", "TRITONSERVER_ErrorNew"), code)
    assert [(m.text, m.level) for m in found] == [
        ("unable to find backend library '{}' for model '{}'", "INVALID_ARG"),
        ("Unable to open shared memory region: '{}'", "INTERNAL"),
    ]
