"""The whole curation loop on a real failure no packaged signature knows, from the command line.

Triton's shared-memory limit (`tests/curation/novel/`, three public threads), on the library as
it stood before Triton's catalog (`DENPEX_RULES`, see tests/curation/conftest.py): diagnosed best
effort and queued, confirmed by a curator, drafted into a signature, back-tested, promoted into
the deployment's overlay, and then the same logs are diagnosed confident by the new signature,
with the overlay's version in the provenance. The packaged library is not touched.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from denpex.cli import app
from denpex.signatures.library import default_rules_dir
from tests.conftest import REPO
from tests.curation.conftest import LMDEPLOY, MONKEYOCR, rules_before_triton

runner = CliRunner()
EVALS = ["--evals", str(REPO / "evals/corpus"), "--evals", str(REPO / "evals/heldout")]
HEALTHY = ["--healthy", str(REPO / "evals/healthy")]


def test_a_novel_failure_is_settled_by_the_rules_after_one_curation(
    tmp_path: Path, embedder
) -> None:
    environment = {
        "DENPEX_STORE": str(tmp_path / "incidents.db"),
        "DENPEX_OVERLAY": str(tmp_path / "overlay"),
        # The library before Triton's catalog, which now knows this failure (conftest there).
        "DENPEX_RULES": str(rules_before_triton()),
    }

    def run(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, list(args), env=environment)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        assert result.exit_code == code, result.output
        return result.stdout

    packaged = sorted(str(p) for p in default_rules_dir().rglob("*"))
    # The re backend throughout, as the back-test and the promotion below: Hyperscan would
    # compile this library, which no other test diagnoses with, for these two logs alone.
    first = json.loads(run("diagnose", str(LMDEPLOY), "-f", "json", "--backend", "re"))
    assert first["status"] == "best_effort"
    assert all(c["failure_class"] != "unsupported_gpu_arch" for c in first["root_causes"])
    incident = first["curation_id"]
    twin = json.loads(run("diagnose", str(MONKEYOCR), "-f", "json", "--backend", "re"))
    twin = twin["curation_id"]

    queue = run("curate", "queue")
    assert queue.startswith("group 1: 2 incident(s)")
    assert incident[:12] in queue and twin[:12] in queue

    run("curate", "confirm", incident[:12], "--class", "unsupported_gpu_arch", "--by", "oncall")
    proposed = run("curate", "propose", incident[:12], *EVALS, *HEALTHY)
    draft = Path(re.search(r"# draft written to (\S+)", proposed).group(1))
    assert draft == tmp_path / "overlay" / ".drafts" / "triton.out_of_resources.yaml"

    tested = run("curate", "backtest", str(draft), *EVALS, *HEALTHY, "--backend", "re")
    assert "stored incidents it matches: 2, of which it changes 2" in tested
    assert "labelled cases it matches: 0" in tested
    assert "healthy log lines it matches: 0" in tested
    assert tested.rstrip().endswith("the back-test is clean")

    promoted = run(
        "curate", "promote", str(draft), *EVALS, *HEALTHY, "--backend", "re", "--by", "oncall"
    )
    assert promoted.startswith("triton.out_of_resources promoted: overlay version 1")
    assert re.search(
        rf"incident {twin[:12]}: best_effort \S+ [\d.]+ -> confident unsupported_gpu_arch "
        r"[\d.]+ \(resolved\)",
        promoted,
    )

    # The re backend reuses what the diagnoses and the back-test compiled.
    again = json.loads(run("diagnose", str(LMDEPLOY), "-f", "json", "--backend", "re"))
    top = again["root_causes"][0]
    assert again["status"] == "confident"
    assert (top["failure_class"], top["signature_id"]) == (
        "unsupported_gpu_arch",
        "triton.out_of_resources",
    )
    assert re.fullmatch(r"\S+ overlay 1\+[0-9a-f]{12}", again["provenance"]["rules_version"])
    assert sorted(str(p) for p in default_rules_dir().rglob("*")) == packaged
    assert "resolved" in run("curate", "list", "--state", "resolved")
