"""Back-tests and backfills split into parts (map) and put back together (reduce).

Consumes a job's kind (`backtest` or `backfill`), its parts (plain data from
`denpex.curation`: stored incidents, labelled cases, healthy logs, past jobs' folders) and its
context (the curation settings, and for a back-test the draft); produces the job's report as
plain data (`Backtest.as_dict`, `Backfill.as_dict`). The same three functions serve every
engine: `run_parts` (the map, in any process that reaches the store and the files),
`reduce_parts` (in the parts' order, so the report does not depend on which process did
what), and `run_local` (this process, or a local process pool with no broker: the embedded
default). `denpex.distributed.celery_jobs` runs the map and the reduce as Celery tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

from denpex.curation.backfill import Backfill, Change, backfill_of, backfill_part
from denpex.curation.backtest import Backtest, backtest_of, backtest_part, hit_of
from denpex.curation.settings import CurationSettings
from denpex.distributed.local import pool_context
from denpex.errors import InputError
from denpex.signatures.signature import Signature
from denpex.store.store import IncidentStore, open_store

KINDS = ("backtest", "backfill")

PartProgress = Callable[[int, int], None]
"""Called as parts end: (parts done, parts in all)."""


def runs_of(count: int, runs: int) -> list[list[int]]:
    """Parts 0..count-1 in at most `runs` runs of about equal length, in order."""
    runs = max(1, min(runs, count))
    size, extra = divmod(count, runs)
    out, start = [], 0
    for number in range(runs):
        end = start + size + (1 if number < extra else 0)
        out.append(list(range(start, end)))
        start = end
    return [run for run in out if run]


@contextmanager
def _store(context: Mapping[str, Any]) -> Iterator[IncidentStore | None]:
    url = context["settings"]["store_url"] if context.get("use_store", True) else None
    store = open_store(url) if url else None
    try:
        yield store
    finally:
        if store is not None:
            store.close()


def run_parts(
    kind: str,
    parts: Sequence[Mapping[str, Any]],
    context: Mapping[str, Any],
    *,
    progress: Callable[[int], None] | None = None,
) -> list[Any]:
    """The map: each part's result as plain data, in the order given (`progress(n)` after the
    n-th)."""
    if kind not in KINDS:
        raise InputError(f"no job of kind {kind!r} (known: {', '.join(KINDS)})")
    settings = CurationSettings.from_json(context["settings"])
    draft = Signature.model_validate(context["draft"]) if kind == "backtest" else None
    results: list[Any] = []
    with _store(context) as store:
        for number, part in enumerate(parts, start=1):
            if draft is not None:
                if store is None:
                    raise InputError("a back-test needs the incident store")
                hits = backtest_part(dict(part), draft, store, settings)
                results.append([asdict(h) for h in hits])
            else:
                results.append(backfill_part(dict(part), store, settings).as_dict())
            if progress is not None:
                progress(number)
    return results


def reduce_parts(kind: str, results: Sequence[Any], context: Mapping[str, Any]) -> dict[str, Any]:
    """The reduce: the report from every part's result, given in the parts' order."""
    settings = CurationSettings.from_json(context["settings"])
    if kind == "backtest":
        draft = Signature.model_validate(context["draft"])
        report = backtest_of(draft, [hit_of(h) for hits in results for h in hits])
        return report.as_dict()
    return backfill_of(settings, [Change.of(r) for r in results]).as_dict()


def report_of(kind: str, document: Mapping[str, Any]) -> Backtest | Backfill:
    """The report object of a reduce's plain data."""
    if kind == "backtest":
        return Backtest.of(document)
    return Backfill(document["library"], [Change.of(c) for c in document["changes"]])


def run_local(
    kind: str,
    parts: Sequence[Mapping[str, Any]],
    context: Mapping[str, Any],
    *,
    workers: int = 1,
    progress: PartProgress | None = None,
) -> dict[str, Any]:
    """The job in this process (`workers` 1) or on a local process pool: same parts, same
    reduce as a Celery job."""
    total = len(parts)
    if workers <= 1 or total <= 1:
        results = run_parts(
            kind, parts, context, progress=(lambda n: progress(n, total)) if progress else None
        )
        return reduce_parts(kind, results, context)
    runs = runs_of(total, workers * 4)
    by_index: dict[int, Any] = {}
    with ProcessPoolExecutor(workers, mp_context=pool_context()) as pool:
        pending = {
            pool.submit(run_parts, kind, [parts[n] for n in run], context): run for run in runs
        }
        for done in as_completed(pending):
            by_index.update(zip(pending[done], done.result(), strict=True))
            if progress is not None:
                progress(len(by_index), total)
    return reduce_parts(kind, [by_index[n] for n in range(total)], context)
