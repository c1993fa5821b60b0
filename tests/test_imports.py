"""Heavy libraries load only on the paths that need them."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import BAD_SAMPLE, REPO

HEAVY = ("torch", "litellm", "sentence_transformers", "faiss", "transformers")


def test_a_case_the_rules_settle_never_imports_heavy_libraries() -> None:
    probe = (
        "import sys\n"
        "from denpex.cli import app\n"
        "try:\n"
        f"    app(['diagnose', {str(BAD_SAMPLE)!r}, '--format', 'json'])\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        f"loaded = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "print('LOADED', loaded, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, cwd=REPO, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr.decode()
    assert b'"confident"' in result.stdout
    assert "LOADED []" in result.stderr.decode()
