"""No catalog signature names an emitter on a line the Python interpreter itself prints.

A generated signature is evidence that its emitter printed the line. The interpreter's own
builtin wordings ("'NoneType' object has no attribute 'shape'", "module 'torch' has no
attribute 'compiler'") are printed alike by every program, so a catalog pattern that matches
one would name vLLM or Ray on any user's AttributeError. The generator excludes such patterns
(`catalogs/core/python_wordings.txt`); this checks the library as packaged, under the prefixes
launchers put in front of a rank's output.
"""

from __future__ import annotations

import pytest

from catalogs.core.generate import python_wordings
from tests.conftest import bundled_matcher

PREFIXES = ("", "[rank3]: ", "(EngineCore_DP0 pid=2345) ", "2: ")


@pytest.mark.parametrize("prefix", PREFIXES)
def test_no_catalog_signature_matches_what_python_itself_prints(prefix: str) -> None:
    matcher = bundled_matcher()
    texts = [prefix + line + "\n" for line in python_wordings()]
    claimed = sorted(
        {
            (match.signature.id, text.strip())
            for text, matches in zip(texts, matcher.scan_texts(texts, keep_all=True), strict=True)
            for match in matches
            if match.signature.generated
        }
    )
    assert claimed == []
