"""Real lines huggingface_hub printed in failed runs meet the signatures generated from its source
(catalogs/hf_hub), its reviewed mapping decides messages as a reviewer would, and its extractor
reads the shapes the shared Python reader does not (the HTTP errors `_format` builds for its
caller to raise, the cache lock's INFO report, OSError's aliases).

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.hf_hub.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "hf_hub_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/Stability-AI/generative-models/issues/222: no route to the Hub, nothing cached
        (
            "huggingface_hub.utils._errors.LocalEntryNotFoundError: An error happened while trying"
            " to locate the file on the Hub and we cannot find the requested files in the local"
            " cache. Please check your connection and try again or make sure your Internet"
            " connection is on",
            "corrupt_or_missing_data",
        ),
        # github.com/harry0703/MoneyPrinterTurbo/issues/156: snapshot_download's wording
        (
            "huggingface_hub.utils._errors.LocalEntryNotFoundError: An error happened while trying"
            " to locate the files on the Hub and we cannot find the appropriate snapshot folder for"
            " the specified revision on the local disk. Please check your internet connection and"
            " try again.",
            "corrupt_or_missing_data",
        ),
        # github.com/PRIME-RL/TTRL/issues/25: a local path that does not exist, read as a repo id
        (
            "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or"
            " 'namespace/repo_name': '~/models/deepseek-llm-7b-chat'. Use `repo_type` argument if"
            " needed.",
            "corrupt_or_missing_data",
        ),
        # github.com/xai-org/grok-1/issues/263: the download's disk check
        (
            "/usr/local/lib/python3.11/dist-packages/huggingface_hub/file_download.py:1006:"
            " UserWarning: Not enough free disk space to download the file. The expected file size"
            " is: 1611.40 MB. The target location /root/.cache/huggingface/hub only has 0.00 MB"
            " free disk space.",
            "disk_full",
        ),
        # github.com/huggingface/huggingface_hub/issues/2543: the cache lock held by another process
        (
            "still waiting to acquire lock on /home/austin/.cache/huggingface/hub/.locks/"
            "models--NousResearch--Meta-Llama-3.1-8B-Instruct/"
            "fc1cdddd6bfa91128d6e94ee73d0ce62bfcdb7af29e978ddcab30c66ae9ea7fa.lock",
            "filesystem_permission",
        ),
    ],
)
def test_a_real_hf_hub_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_a_gated_repo_is_left_to_the_hand_written_signature(matcher: Matcher) -> None:
    # GatedRepoError's text is what rules/hf/gated_repo.yaml reads: the catalog maps it there
    line = "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-2-7b-hf/resolve/main/config.json."
    assert not catalog_hits(matcher, line, FAMILY)
    assert {m.signature.id for m in matcher.scan_text(line)} == {"hf.gated_repo"}


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 1.28 src/huggingface_hub/file_download.py: offline and not in the cache
        (
            "Cannot find the requested files in the disk cache and outgoing traffic has been"
            " disabled. To enable hf.co look-ups and downloads online, set 'local_files_only' to"
            " False.",
            "LocalEntryNotFoundError",
            "src/huggingface_hub/file_download.py",
            "corrupt_or_missing_data",
        ),
        # 1.28 src/huggingface_hub/utils/_http.py: a token without the rights the request needs
        (
            "\n\n{response.status_code} Forbidden: {error_message}.\nCannot access content at:"
            " {response.url}.\nMake sure your token has the correct permissions.",
            "HfHubHTTPError",
            "src/huggingface_hub/utils/_http.py",
            "filesystem_permission",
        ),
        # 0.26 src/huggingface_hub/repository.py: push_to_hub's clone into a used output_dir
        (
            "Tried to clone a repository in a non-empty folder that isn't a git repository"
            " ('{self.local_dir}').",
            "OSError",
            "src/huggingface_hub/repository.py",
            "framework_config_error",
        ),
        # 1.28 src/huggingface_hub/file_download.py: hf_xet missing for a Xet-stored file
        (
            "To use optimized download using Xet storage, you need to install the hf_xet package."
            ' Try `pip install "huggingface_hub[hf_xet]"` or `pip install hf_xet`.',
            "ValueError",
            "src/huggingface_hub/file_download.py",
            "dependency_error",
        ),
        # 1.28 src/huggingface_hub/hf_api.py: an argument check of HfApi is the caller's bug, not
        # a setting of the run
        (
            "Pass either `local_dir` or `cache_dir`, not both.",
            "ValueError",
            "src/huggingface_hub/hf_api.py",
            "python_exception",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("hf_hub", text, level, file, failure_class)


@pytest.mark.parametrize(
    ("text", "level"),
    [
        # a download that fell back on the cached copy: the run goes on
        (
            "Couldn't access the Hub to check for update but local file already exists. Defaulting"
            " to existing file. (error: {head_call_error})",
            "WARNING",
        ),
        # a request retried
        ("Retrying in {actual_sleep}s [Retry {nb_tries}/{max_retries}].", "WARNING"),
        (
            "Note: Environment variable `HF_TOKEN` is set and is the current active token.",
            "WARNING",
        ),
    ],
)
def test_fallbacks_retries_and_notes_stay_context(text: str, level: str) -> None:
    decision = decide("hf_hub", text, level, "src/huggingface_hub/file_download.py")
    assert decision.disposition == "context"


def test_a_healthy_download_line_is_not_matched(matcher: Matcher) -> None:
    for line in (
        "Fetching 4 files: 100%|██████████| 4/4 [00:12<00:00,  3.02s/it]",
        "Download complete. Moving file to /root/.cache/huggingface/hub/models--gpt2/blobs/abc",
        "Token is valid (permission: read).",
    ):
        assert not catalog_hits(matcher, line, FAMILY)


def test_the_extractor_reads_format_calls_the_lock_report_and_aliases(tmp_path: Path) -> None:
    package = tmp_path / "src" / "huggingface_hub"
    (package / "utils").mkdir(parents=True)
    (package / "utils" / "_http.py").write_text(
        "def hf_raise_for_status(response):\n"
        "    message = (\n"
        '        f"{response.status_code} Client Error."\n'
        '        + "\\n\\n"\n'
        '        + f"Repository Not Found for url: {response.url}."\n'
        '        + "\\nPlease make sure you specified the correct `repo_id`."\n'
        "    )\n"
        "    raise _format(RepositoryNotFoundError, message, response) from None\n"
    )
    (package / "utils" / "_fixes.py").write_text(
        'def lock(lock_file):\n    logger.info("still waiting to acquire lock on %s", lock_file)\n'
    )
    (package / "repository.py").write_text(
        "def clone(self):\n"
        '    logger.info("not read: an INFO line outside the lock helper")\n'
        '    raise EnvironmentError("Looks like you do not have git installed, please install.")\n'
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "1.28")}
    assert found == {
        (
            "RepositoryNotFoundError",
            "{response.status_code} Client Error.\n\nRepository Not Found for url: {response.url}."
            "\nPlease make sure you specified the correct `repo_id`.",
            "fstring",
        ),
        ("INFO", "still waiting to acquire lock on %s", "printf"),
        ("OSError", "Looks like you do not have git installed, please install.", "literal"),
    }


def test_the_catalog_reads_the_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["0.26", "0.36", "1.28"]
    assert all(row["found"] > 0 for row in accounting["releases"])
