"""Builds the seed history that `denpex.retrieval.seed` ships: every labelled failure of the eval
folders indexed as the hybrid path records it, and the template vectors beside it.

`python -m denpex.evaluation.seed --write` rewrites `engine/retrieval/seed/incidents.jsonl`,
`seed/vectors.npy` and `seed/vectors.json` (run it when cases are added); without `--write` it
prints the incidents.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

import denpex.retrieval
from denpex.evaluation.retrieval import index_corpus, scratch_path
from denpex.match.scan import Matcher
from denpex.retrieval.corpus import load_corpora
from denpex.retrieval.embedder import SentenceTransformerEmbedder
from denpex.retrieval.seed import SEED_RESOURCE, SEED_VECTORS, SEED_VECTORS_META
from denpex.signatures.library import load_library


def build_seed(corpora: Sequence[Path]) -> list[dict[str, object]]:
    """Each labelled failure's masked lines, as the hybrid path records them."""
    cases = load_corpora(corpora)
    with tempfile.TemporaryDirectory(prefix="denpex-seed-") as workdir:
        path = scratch_path(Path(workdir), SentenceTransformerEmbedder())
        indexed = index_corpus(cases, path, Matcher(load_library()), threshold=0.6)
        incidents = path.store.incidents(item.incident_id for item in indexed)
        by_id = {incident.id: incident for incident in incidents}
        rows = []
        for item in indexed:
            rows.append(
                {
                    "case": item.case.name,
                    "source": _source_of(item.case.directory),
                    "failure_class": item.case.failure_class,
                    "templates": by_id[item.incident_id].templates,
                }
            )
    return rows


def write_seed_vectors(rows: Sequence[dict[str, object]], directory: Path) -> int:
    """Embeds the seed's distinct templates and writes them with the model's name and digest."""
    import numpy as np

    embedder = SentenceTransformerEmbedder()
    templates = list(
        dict.fromkeys(t for row in rows for t in row["templates"])  # type: ignore[attr-defined]
    )
    vectors = embedder.encode(templates)
    with (directory / SEED_VECTORS).open("wb") as stream:
        np.save(stream, vectors.astype(np.float32), allow_pickle=False)
    meta = {"embedder": embedder.name, "model_digest": embedder.digest, "templates": templates}
    (directory / SEED_VECTORS_META).write_text(
        json.dumps(meta, ensure_ascii=False, indent=0) + "\n", encoding="utf-8"
    )
    return len(templates)


def _source_of(directory: Path) -> str:
    expected = json.loads((directory / "expected.json").read_text(encoding="utf-8"))
    return str(expected.get("source") or directory.name)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "corpora", nargs="*", type=Path, default=[Path("evals/corpus"), Path("evals/heldout")]
    )
    parser.add_argument(
        "--write", action="store_true", help=f"write engine/retrieval/{SEED_RESOURCE}"
    )
    args = parser.parse_args(argv)
    rows = build_seed(args.corpora)
    text = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
    if args.write:
        here = Path(denpex.retrieval.__file__).resolve().parent
        target = here / SEED_RESOURCE
        target.write_text(text, encoding="utf-8")
        print(f"{len(rows)} seed incidents written to {target}")
        count = write_seed_vectors(rows, here)
        print(f"{count} template vectors written to {here / SEED_VECTORS}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
