"""The C scanner finds each logging call's format string the way the compiler would see it.

The C snippets below are written for these tests in the shape the emitters use (Slurm's
`error()`, the kernel's `pr_err()`/`dev_err()` under a `pr_fmt`, libfabric's `FI_WARN`); they are
not copied from any program.
"""

from __future__ import annotations

from catalogs.csource import (
    define_string,
    find_calls,
    function_returns,
    literal_value,
    string_macros,
    strip_comments,
    table_strings,
)


def test_adjacent_literals_join_and_escapes_decode() -> None:
    assert literal_value('"first half, " "second half\\n"') == "first half, second half\n"
    assert literal_value('"tab\\there"') == "tab\there"


def test_inttypes_macros_between_literals_print_like_their_conversion() -> None:
    assert literal_value('"used %" PRIu64 " of %" PRIx64') == "used %lu of %lx"


def test_an_argument_that_is_not_only_literals_is_no_format() -> None:
    assert literal_value("msg") is None
    assert literal_value('cond ? "a" : "b"') is None


def test_calls_give_the_format_line_and_enclosing_function() -> None:
    source = (
        "static int check_step(int id)\n"
        "{\n"
        '\terror("step %d failed: %s",\n'
        '\t      id, "oops");\n'
        "\treturn 0;\n"
        "}\n"
    )
    (call,) = find_calls(source, ["error"], format_arg={"error": 0})
    assert call.text == "step %d failed: %s"
    assert call.line == 3
    assert call.function == "check_step"


def test_the_first_literal_argument_is_the_format_when_no_index_is_given() -> None:
    source = 'void f(void) { FI_WARN(&prov, FI_LOG_CORE, "no device %s found\\n", name); }\n'
    (call,) = find_calls(source, ["FI_WARN"])
    assert call.text == "no device %s found\n"


def test_comments_and_if0_blocks_hide_calls() -> None:
    source = (
        '/* error("in a comment"); */\n'
        '// error("in a line comment");\n'
        "#if 0\n"
        'error("compiled out");\n'
        "#else\n"
        'error("compiled in");\n'
        "#endif\n"
    )
    assert [c.text for c in find_calls(source, ["error"])] == ["compiled in"]
    assert strip_comments("a /* b\nc */ d").count("\n") == 1


def test_a_macro_definition_is_not_a_call() -> None:
    source = '#define WARN_LOUD(fmt) error("loud: " fmt)\nerror("real");\n'
    assert [c.text for c in find_calls(source, ["error"])] == ["real"]


def test_longer_names_are_not_cut_short() -> None:
    source = 'pr_err_ratelimited("rate limited\\n");\npr_err("plain\\n");\n'
    calls = {c.name: c.text for c in find_calls(source, ["pr_err", "pr_err_ratelimited"])}
    assert calls == {"pr_err_ratelimited": "rate limited\n", "pr_err": "plain\n"}


def test_pr_fmt_prefix_and_string_macros_are_read_from_the_file() -> None:
    source = '#define pr_fmt(fmt) "AER: " fmt\n#define DRV "mydrv"\n'
    assert define_string(source, "pr_fmt") == {"pr_fmt": "AER: "}
    assert string_macros(source) == {"DRV": "mydrv"}


def test_tables_and_returned_strings() -> None:
    source = (
        "static const char *const names[] = {\n"
        '\t[0] = "first state",\n'
        '\t[1] = "second state",\n'
        "};\n"
        "char *state_name(int s)\n"
        "{\n"
        "\tswitch (s) {\n"
        '\tcase 0: return "RUNNING";\n'
        '\tdefault: return "?";\n'
        "\t}\n"
        "}\n"
    )
    assert list(table_strings(source, "names")) == [("first state", 2), ("second state", 3)]
    assert [text for text, _ in function_returns(source, "state_name")] == ["RUNNING", "?"]
