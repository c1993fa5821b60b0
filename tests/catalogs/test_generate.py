"""The generator's steps on real source text: reading C format strings, applying a reviewed
mapping, release ranges, and a deterministic, idempotent writer."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from catalogs.core.cli import family_library, generate
from catalogs.core.csource import find_calls
from catalogs.core.generate import (
    Catalog,
    build_signatures,
    classify,
    exclude_python_wordings,
    mark_hand_written,
    merge_releases,
    merge_rewordings,
    release_range,
)
from catalogs.core.mapping import Mapping, RealLine, load_mapping
from catalogs.core.message import Message
from catalogs.core.source import SourceSpec, emitter_dir, load_source, release_tree
from catalogs.core.writer import read_lock, write_catalog
from denpex.match.scan import Matcher
from denpex.signatures.library import load_library, load_signature

RULES = Path(__file__).resolve().parents[2] / "rules"

# nccl src/include/checks.h (v2.18.6-1), SYSCHECK and CUDACHECK as written there.
CHECKS_H = r"""
#define SYSCHECKSYNC(call, name, retval) do { \
  retval = call; \
  if (retval == -1 && (errno == EINTR || errno == EWOULDBLOCK || errno == EAGAIN)) { \
    INFO(NCCL_ALL,"Call to " name " returned %s, retrying", strerror(errno)); \
  } else { \
    break; \
  } \
} while(true)

#define SYSCHECK(call, name) do { \
  int retval; \
  SYSCHECKSYNC(call, name, retval); \
  if (retval == -1) { \
    WARN("Call to " name " failed : %s", strerror(errno)); \
    return ncclSystemError; \
  } \
} while (false)

// WARN("commented out %d", x);
#define CUDACHECK(cmd) do { \
    cudaError_t err = cmd; \
    if( err != cudaSuccess ) { \
        WARN("Cuda failure '%s'", cudaGetErrorString(err)); \
        return ncclUnhandledCudaError; \
    } \
} while(false)
static void f(uint64_t n) { WARN("Got %" PRIu64 " bytes\n", n); WARN(msg); }
"""


def test_c_calls_give_their_format_with_literals_joined_and_macros_kept_as_text() -> None:
    calls = [
        (c.name, c.line, c.args[1 if c.name == "INFO" else 0])
        for c in find_calls(CHECKS_H, ("WARN", "INFO"))
    ]
    assert calls == [
        ("INFO", 5, "Call to %s returned %s, retrying"),
        ("WARN", 15, "Call to %s failed : %s"),
        ("WARN", 24, "Cuda failure '%s'"),
        ("WARN", 28, "Got %lu bytes\n"),
        ("WARN", 28, ""),  # a format held in a variable has no text
    ]


MAPPING = Mapping.model_validate(
    {
        "emitter": "nccl",
        "family": "nccl_cat",
        "owner_default": "infrastructure",
        "references": ["https://github.com/NVIDIA/nccl"],
        "rules": [
            {"when": "retrying", "disposition": "context"},
            {
                "when": "Got completion from peer",
                "class": "network_fabric_error",
                "role": "symptom",
                "confidence": 0.35,
                "next_steps": ["Check the HCA's port state."],
            },
            {"when": "Debug", "disposition": "excluded", "reason": "debug-only output"},
        ],
        "default": {
            "class": "nccl_internal_error",
            "next_steps": ["Look for the first WARN on any rank."],
        },
    }
)


def _message(text: str, release: str = "2.18", level: str = "WARN") -> Message:
    return Message("nccl", release, text, "printf", "src/transport/net_ib.cc", 1234, level)


def test_the_first_matching_rule_wins_and_the_rest_falls_to_a_low_prior_default() -> None:
    assert MAPPING.decide(_message("Call to %s returned %s, retrying")).disposition == "context"
    fabric = MAPPING.decide(_message("NET/IB : Got completion from peer %s with error %d"))
    assert (fabric.failure_class, fabric.role, fabric.confidence) == (
        "network_fabric_error",
        "symptom",
        0.35,
    )
    excluded = MAPPING.decide(_message("Debug dump of %s"))
    assert excluded.disposition == "excluded" and excluded.reason == "debug-only output"
    unclear = MAPPING.decide(_message("Proxy append out of bounds"))
    assert unclear.failure_class == "nccl_internal_error"
    assert unclear.confidence is not None and unclear.confidence <= 0.35


def test_release_ranges_follow_the_pinned_lines() -> None:
    lines = ["2.18", "2.19", "2.21", "2.23", "master"]
    assert release_range(["2.18", "2.19", "2.21"], lines) == ">=2.18,<=2.21"
    assert release_range(["2.21"], lines) == "==2.21"
    assert release_range(["2.18", "2.23", "master"], lines) == "==2.18 || >=2.23,<=master"


def test_a_text_printed_at_two_levels_is_the_failure_report_at_the_more_severe_one() -> None:
    # NCCL's cudawrap.h: CUCHECK WARNs "Cuda failure %d '%s'", CUCHECKIGNORE INFOs the same
    # text further down the file; the INFO call site must not make the WARN context.
    text = "Cuda failure %d '%s'"
    warned = Message("nccl", "2.18", text, "printf", "src/include/cudawrap.h", 36, "WARN")
    ignored = Message("nccl", "2.18", text, "printf", "src/include/cudawrap.h", 62, "INFO")
    for order in ([warned, ignored], [ignored, warned]):
        (entry,) = merge_releases({"2.18": order}, ["2.18"])
        assert entry.level == "WARN"


SPEC = SourceSpec.model_validate(
    {
        "emitter": "nccl",
        "repo": "https://github.com/NVIDIA/nccl",
        "releases": [{"line": "2.18", "ref": "v2.18.6-1"}, {"line": "2.19", "ref": "v2.19.4-1"}],
        "line_template": "gpu-017:20315:20402 [3] {path}:{line} NCCL {level} {message}",
        "file_prefix": "src/",
    }
)
FORMATS = {
    "2.18": [
        "NET/IB : Got completion from peer %s with error %d, opcode %d, len %d, vendor err %d",
        "Call to %s returned %s, retrying",
        "%s",
    ],
    "2.19": [
        "NET/IB : Got completion from peer %s with error %d, opcode %d, len %d, vendor err %d",
        "Proxy append out of bounds",
    ],
}


def _catalog() -> Catalog:
    found = {line: [_message(text, line) for text in texts] for line, texts in FORMATS.items()}
    entries = merge_releases(found, SPEC.line_names())
    classify(entries, SPEC, MAPPING)
    refs = {r.line: r.ref for r in SPEC.releases}
    signatures = build_signatures(entries, SPEC, MAPPING, refs)
    return Catalog("nccl", "nccl_cat", SPEC.line_names(), refs, entries, signatures)


def test_every_message_is_accounted_for_and_signatures_are_valid(tmp_path: Path) -> None:
    catalog = _catalog()
    dispositions = {e.text: (e.disposition, e.reason) for e in catalog.entries}
    assert dispositions["%s"] == ("excluded", "too generic to match safely")
    assert dispositions["Call to %s returned %s, retrying"][0] == "context"
    write_catalog(catalog, tmp_path)
    (tmp_path / "VERSION").write_text("0.0.1\n")
    files = sorted((tmp_path / "nccl_cat").glob("*.yaml"))
    assert len(files) == 2
    fabric = next(
        s
        for s in (load_signature(p, tmp_path) for p in files)
        if s.failure_class == "network_fabric_error"
    )
    assert fabric.generated and fabric.priority == 20 and fabric.releases == ">=2.18,<=2.19"
    assert fabric.examples.match[0].rendered
    assert fabric.examples.match[0].line.startswith(
        "gpu-017:20315:20402 [3] transport/net_ib.cc:1234 NCCL WARN NET/IB : Got completion"
    )
    accounting = json.loads((tmp_path / "nccl_cat" / "CATALOG.json").read_text())
    assert [
        (r["line"], r["found"], r["mapped"], r["context"], r["excluded"])
        for r in accounting["releases"]
    ] == [("2.18", 3, 1, 1, 1), ("2.19", 2, 2, 0, 0)]


def test_a_real_line_becomes_a_match_example_with_its_source_where_a_signature_reads_it() -> None:
    # a line as NET/IB prints it on a failed completion (the values made up)
    real = (
        "node-3:1234:1290 [2] transport/net_ib.cc:1234 NCCL WARN NET/IB : Got completion from"
        " peer 10.0.0.2<43521> with error 12, opcode 0, len 0, vendor err 129"
    )
    mapping = MAPPING.model_copy(
        update={
            "real_lines": [
                RealLine(line=real, source="https://example.invalid/issue/1"),
                RealLine(line="a line no signature reads", source="https://example.invalid/2"),
            ]
        }
    )
    found = {line: [_message(text, line) for text in texts] for line, texts in FORMATS.items()}
    entries = merge_releases(found, SPEC.line_names())
    classify(entries, SPEC, mapping)
    signatures = build_signatures(entries, SPEC, mapping, {})
    examples = [e for s in signatures for e in s["examples"]["match"] if "source" in e]
    assert examples == [{"line": real, "source": "https://example.invalid/issue/1"}]


def test_writing_twice_is_byte_identical_and_the_lock_reads_back(tmp_path: Path) -> None:
    write_catalog(_catalog(), tmp_path)
    first = {p.name: p.read_bytes() for p in (tmp_path / "nccl_cat").iterdir()}
    changed = write_catalog(_catalog(), tmp_path)
    assert changed == []
    assert {p.name: p.read_bytes() for p in (tmp_path / "nccl_cat").iterdir()} == first
    lock = read_lock(tmp_path / "nccl_cat" / "CATALOG.json", "nccl")
    assert sorted(m.text for m in lock["2.19"]) == sorted(FORMATS["2.19"])


REWORDED_SPEC = SourceSpec.model_validate(
    {
        "emitter": "nccl",
        "repo": "https://github.com/NVIDIA/nccl",
        "releases": [
            {"line": "2.4", "ref": "v2.4.8-1"},
            {"line": "2.12", "ref": "v2.12.12-1"},
            {"line": "2.18", "ref": "v2.18.6-1"},
        ],
        "line_template": "gpu-017:20315:20402 [3] {path}:{line} NCCL {level} {message}",
        "file_prefix": "src/",
    }
)


def _reworded_catalog(found: dict[str, list[str]]) -> Catalog:
    messages = {line: [_message(text, line) for text in texts] for line, texts in found.items()}
    entries = merge_releases(messages, REWORDED_SPEC.line_names())
    classify(entries, REWORDED_SPEC, MAPPING)
    merge_rewordings(entries, REWORDED_SPEC)
    refs = {r.line: r.ref for r in REWORDED_SPEC.releases}
    signatures = build_signatures(entries, REWORDED_SPEC, MAPPING, refs)
    return Catalog("nccl", "nccl_cat", REWORDED_SPEC.line_names(), refs, entries, signatures)


def test_a_reworded_message_keeps_one_signature_over_all_its_releases(tmp_path: Path) -> None:
    # nccl: src/include/socket.h up to 2.12, src/misc/socket.cc from 2.18
    catalog = _reworded_catalog(
        {
            "2.4": ["Net : Socket creation failed : %s"],
            "2.12": ["Net : Socket creation failed : %s"],
            "2.18": ["ncclSocketInit: Socket creation failed : %s"],
        }
    )
    [signature] = catalog.signatures
    assert signature["releases"] == ">=2.4,<=2.18"
    assert signature["patterns"] == [{"regex": "Socket creation failed :"}]
    assert signature["source"]["format"] == "ncclSocketInit: Socket creation failed : %s"
    lines = [example["line"] for example in signature["examples"]["match"]]
    assert [line.split(" WARN ")[1].rsplit(" : ", 1)[0] for line in lines] == [
        "ncclSocketInit: Socket creation failed",
        "Net : Socket creation failed",
    ]
    write_catalog(catalog, tmp_path)
    (tmp_path / "VERSION").write_text("0.0.1\n")
    [path] = (tmp_path / "nccl_cat").glob("*.yaml")
    assert load_signature(path, tmp_path).releases == ">=2.4,<=2.18"


def test_wordings_printed_side_by_side_are_different_messages() -> None:
    # nccl 2.30 prints both (src/plugin/gin.cc, src/plugin/net.cc): two messages, not one
    # reworded, so each keeps its own signature though they differ in one word
    catalog = _reworded_catalog(
        {
            "2.18": [
                "trying to access the number of devices of an uninitialized ginPlugin[%d]",
                "trying to access the number of devices of an uninitialized netPlugin[%d]",
            ]
        }
    )
    assert len(catalog.signatures) == 2


def test_an_anchor_pattern_must_match_the_anchor_it_stands_for() -> None:
    base = {
        "emitter": "nccl",
        "repo": "https://github.com/NVIDIA/nccl",
        "releases": [{"line": "2.18", "ref": "v2.18.6-1"}],
        "anchors": {"WARN": "NCCL WARN "},
    }
    spec = SourceSpec.model_validate(
        base | {"anchor_patterns": {"WARN": r"(?:NCCL |\[\d{1,5}\] [^ ]+:\d+ )WARN "}}
    )
    assert spec.anchor_pattern_for("WARN").endswith("WARN ")
    assert spec.anchor_pattern_for("INFO") == ""
    with pytest.raises(ValidationError, match="does not match its anchor"):
        SourceSpec.model_validate(base | {"anchor_patterns": {"WARN": r"\[\d+\] WARN "}})


PY_SPEC = SourceSpec.model_validate(
    {
        "emitter": "pytorch_ddp",
        "repo": "https://github.com/pytorch/pytorch",
        "releases": [{"line": "2.7", "ref": "v2.7.1"}],
        "line_template": "[rank3]: {level}: {message}",
    }
)
PY_MAPPING = Mapping.model_validate(
    {
        "emitter": "pytorch_ddp",
        "family": "pytorch_ddp_cat",
        "owner_default": "training",
        "references": ["https://github.com/pytorch/pytorch"],
        "default": {"class": "ddp_usage_error", "next_steps": ["Read the traceback."]},
    }
)


def test_a_generic_fallback_claims_no_message_and_a_specific_hand_written_signature_does() -> None:
    # torch/nn/parallel/distributed.py (v2.7.1): both are raised, so both render as
    # '[rank3]: ValueError: ...' lines that the generic python.uncaught_exception also matches
    texts = {
        "device_ids can only be None or contain a single element.": "ValueError",
        "DistributedDataParallel is not needed when a module doesn't have any parameter that "
        "requires a gradient.": "RuntimeError",
    }
    ddp = "torch/nn/parallel/distributed.py"
    found = {
        "2.7": [
            Message("pytorch_ddp", "2.7", text, "literal", ddp, 1, level)
            for text, level in texts.items()
        ]
    }
    entries = merge_releases(found, PY_SPEC.line_names())
    classify(entries, PY_SPEC, PY_MAPPING)
    mark_hand_written(entries, Matcher(load_library(RULES, include_catalogs=False), "re"), PY_SPEC)
    claimed = {e.text: e.signature for e in entries}
    assert claimed["device_ids can only be None or contain a single element."] is None
    assert claimed[next(t for t in texts if t.startswith("Distributed"))] == (
        "fsdp.ddp_no_trainable_params"
    )


def test_a_fork_s_message_its_parent_s_catalog_matches_maps_there_and_generates_nothing() -> None:
    # RCCL (ROCm/rccl rocm-6.2.2) keeps NCCL's src/misc/ipcsocket.cc WARN word for word, which
    # nccl_cat already matches; its clique message queue's timeout is its own.
    folder = emitter_dir("rccl")
    spec, mapping = load_source(folder), load_mapping(folder / "mapping.yaml")
    shared = "UDS: Cannot bind provided name to socket. Name too large"
    own = "Message Queue timed out waiting for all ranks to receive messages."
    found = {
        "6.2": [
            Message("rccl", "6.2", shared, "literal", "src/misc/ipcsocket.cc", 43, "WARN"),
            Message("rccl", "6.2", own, "literal", "src/clique/MsgQueue.cc", 79, "WARN"),
        ]
    }
    entries = merge_releases(found, spec.line_names())
    classify(entries, spec, mapping)
    parent = family_library(RULES, spec.covered_by, mapping.family)
    mark_hand_written(entries, Matcher(parent, "re"), spec, "catalog")
    by_text = {e.text: e for e in entries}
    assert by_text[shared].signature is not None
    assert by_text[shared].signature.startswith("nccl_cat.")
    assert by_text[shared].reason is not None
    assert by_text[shared].reason.startswith("covered by catalog nccl_cat.")
    assert by_text[own].signature is None  # RCCL's own: its family generates it
    [signature] = build_signatures(entries, spec, mapping, {"6.2": "rocm-6.2.2"})
    assert signature["source"]["format"] == own


@pytest.mark.parametrize("family", ["rccl_cat", "nccl", "no_such_cat"])
def test_covered_by_names_another_generated_family(family: str) -> None:
    with pytest.raises(ValueError, match="covered_by"):
        family_library(RULES, [family], "rccl_cat")


def test_an_exclude_pathspec_leaves_files_out_of_the_release_tree(tmp_path: Path) -> None:
    # oneCCL's mirror lacks the blob of src/kernels/kernels.spv: git archive must not ask for it
    repo = tmp_path / "repo"
    (repo / "src" / "kernels").mkdir(parents=True)
    (repo / "src" / "log.cpp").write_text('LOG_ERROR("can not open network providers");\n')
    (repo / "src" / "kernels" / "kernels.spv").write_bytes(b"\x03\x02\x23\x07")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "tree"], check=True)
    with release_tree(repo, "HEAD", ["src", ":(exclude)src/kernels/*.spv"]) as tree:
        files = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file())
    assert files == ["src/log.cpp"]


PYTHON_SPEC = SourceSpec.model_validate(
    {
        "emitter": "vllm",
        "repo": "https://github.com/vllm-project/vllm",
        "releases": [{"line": "0.32", "ref": "v0.32.0"}],
        "line_template": "(EngineCore_DP0 pid=2345) {message}",
    }
)


def test_a_library_message_in_pythons_own_words_is_excluded_whatever_its_format() -> None:
    # vllm 0.32 vllm/utils/humming.py (__getattr__), and a lazy module's __getattr__ as
    # transformers and ray write it: the f-string has no quotes, `!r` adds them when it runs,
    # so a mapping rule written for "'{x}' object has no attribute '{y}'" misses them.
    texts = [
        "{type(self).__name__!r} object has no attribute {name!r}",
        "module {__name__!r} has no attribute {name!r}",
        "Engine core initialization failed. See root cause above. Failed core proc(s): {failed}",
    ]
    found = {
        "0.32": [
            Message("vllm", "0.32", text, "fstring", "vllm/utils/humming.py", 143, "AttributeError")
            for text in texts
        ]
    }
    entries = merge_releases(found, PYTHON_SPEC.line_names())
    classify(entries, PYTHON_SPEC, MAPPING)
    exclude_python_wordings(entries)
    decided = {e.text: (e.disposition, e.reason or "") for e in entries}
    for text in texts[:2]:
        disposition, reason = decided[text]
        assert disposition == "excluded" and "Python itself prints" in reason
    assert decided[texts[2]][0] == "mapped"


def test_re_mapping_what_the_catalog_records_writes_what_is_on_disk(tmp_path: Path) -> None:
    # `generate --recorded` applies mapping.yaml and the generator to CATALOG.json's messages:
    # for a family whose mapping has not changed since it was generated, nothing changes.
    family = tmp_path / "rules"
    shutil.copytree(RULES, family, ignore=shutil.ignore_patterns("*_cat"))
    shutil.copytree(RULES / "nccl_tests_cat", family / "nccl_tests_cat")
    before = {p.name: p.read_bytes() for p in (family / "nccl_tests_cat").iterdir()}
    catalog, changed = generate("nccl_tests", None, rules_dir=family)
    assert changed == []
    assert {p.name: p.read_bytes() for p in (family / "nccl_tests_cat").iterdir()} == before
    assert len(catalog.signatures) == sum(name.endswith(".yaml") for name in before)
