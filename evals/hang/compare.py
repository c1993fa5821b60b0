"""Side by side: `denpex hang` and PyTorch's own analyzer (torchfrtrace) on every eval case.

Usage (from the repository root):

    .venv/bin/python evals/hang/compare.py           # print the Markdown table
    .venv/bin/python evals/hang/compare.py --write   # also store each analyzer's output

torchfrtrace is `python -m torch.distributed.flight_recorder.fr_trace DIR --prefix fr_dump_`,
shipped in the torch wheel. It is run three ways:
- raw: on the dumps as Gloo wrote them;
- repaired: on copies whose `pg_config` is rewritten with each group's true name, description and
  ranks (known to the generator, not to any analyzer: an advantage denpex does not get), adding
  `--allow-incomplete-ranks` when a rank left no dump;
- reordered: repaired, with the dumps handed over rank 0 first and then highest rank first, since
  it matches collectives starting from whichever dump it read first.
torchfrtrace loads pickles with the standard unpickler; that is acceptable here only because these
dumps were produced by this repository's own generator.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
FR_TRACE = ["-m", "torch.distributed.flight_recorder.fr_trace"]


def _generator() -> object:
    spec = importlib.util.spec_from_file_location("hang_generate", HERE / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through it
    spec.loader.exec_module(module)
    return module


# --- torchfrtrace ------------------------------------------------------------------------------


@dataclass
class FrRun:
    label: str
    exit_code: int
    output: str

    @property
    def verdict(self) -> str:
        return summarise(self.output, self.exit_code)


def summarise(output: str, exit_code: int) -> str:
    """The analyzer's conclusions, one clause each, in the order it printed them."""
    found: list[str] = []
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if match := re.match(r"Not all ranks joining collective, sequence number: (\d+)", line):
            missing = next((m for m in lines[index:] if m.startswith("missing ranks:")), "")
            found.append(f"seq {match.group(1)}: {missing}")
        elif match := re.match(r"Collective sequence number: (\d+) has errors", line):
            blamed: dict[str, set[str]] = {}
            for later in lines[index + 1 : index + 20]:
                for rank, kind in re.findall(r"Culprit rank (\d+); Error type: (\w+)", later):
                    blamed.setdefault(kind, set()).add(rank)
            culprits = [
                f"culprit rank(s) {', '.join(sorted(ranks, key=int))} ({kind})"
                for kind, ranks in sorted(blamed.items())
            ]
            found.append(f"seq {match.group(1)}: " + ", ".join(culprits or ["errors"]))
        elif match := re.match(
            r"Input/output mismatch in the collective sequence number: (\d+)", line
        ):
            found.append(f"seq {match.group(1)}: input/output mismatch")
    undecided = sum("We cannot decide" in line for line in lines)
    if undecided:
        found.append(f"{undecided}x 'We cannot decide' (missing dumps)")
    no_errors = sum("No errors found for this collective entry" in line for line in lines)
    if no_errors:
        found.append(f"{no_errors}x 'No errors found'")
    crash = next(
        (line for line in reversed(lines) if re.match(r"\w+(Error|Exception):", line)), None
    )
    if crash:
        found.append(f"stops: {crash.strip()[:90]}")
    if not found:
        found.append("nothing reported")
    return "; ".join(found) + f" (exit {exit_code})"


def run_fr_trace(directory: Path, extra: list[str]) -> tuple[int, str]:
    result = subprocess.run(
        [sys.executable, *FR_TRACE, str(directory), "--prefix", "fr_dump_", *extra],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return result.returncode, result.stdout + result.stderr


def repair(case: str, source: Path, target: Path) -> None:
    """Copies of the dumps with the pg_config torch would write for NCCL: true names and ranks."""
    generator = _generator()
    spec = generator.CASES[case]  # type: ignore[attr-defined]
    groups = {"0": ("default_pg", list(range(spec.world)))}
    for index, members in enumerate(spec.subgroups, start=1):
        groups[str(index)] = ("undefined", list(members))
    config = {
        name: {"name": name, "desc": desc, "ranks": str(ranks)}
        for name, (desc, ranks) in groups.items()
    }
    target.mkdir(parents=True, exist_ok=True)
    for dump in sorted(source.iterdir()):
        raw = pickle.loads(dump.read_bytes())  # our own generator's output, see the docstring
        raw["pg_config"] = config
        (target / dump.name).write_bytes(pickle.dumps(raw, protocol=2))


def run_reordered(directory: Path, first: str, incomplete: bool) -> tuple[int, str]:
    """torchfrtrace's own pipeline, with its per-rank dumps in a chosen order."""
    argv = [str(directory), "--prefix", "fr_dump_"]
    argv += ["--allow-incomplete-ranks"] if incomplete else []
    code = f"""
from torch.distributed.flight_recorder.components.builder import build_db
from torch.distributed.flight_recorder.components.config_manager import JobConfig
from torch.distributed.flight_recorder.components.loader import read_dir
args = JobConfig().parse_args({argv!r})
details, version = read_dir(args)
ordered = sorted(details, key=lambda k: details[k]["rank"], reverse={first == "highest"})
build_db({{k: details[k] for k in ordered}}, args, version)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False
    )
    return result.returncode, result.stdout + result.stderr


def fr_trace_runs(case: str) -> list[FrRun]:
    dumps = HERE / case / "dumps"
    runs = [FrRun("raw", *run_fr_trace(dumps, []))]
    generator = _generator()
    world = generator.CASES[case].world  # type: ignore[attr-defined]
    incomplete = len(list(dumps.iterdir())) < world
    with tempfile.TemporaryDirectory() as scratch:
        repaired = Path(scratch) / "dumps"
        repair(case, dumps, repaired)
        extra = ["--allow-incomplete-ranks"] if incomplete else []
        if incomplete:
            runs.append(FrRun("repaired", *run_fr_trace(repaired, [])))
        runs.append(
            FrRun(
                "repaired" + (" --allow-incomplete-ranks" if incomplete else ""),
                *run_fr_trace(repaired, extra),
            )
        )
        for first in ("lowest", "highest"):
            runs.append(
                FrRun(
                    f"repaired, {first} rank read first",
                    *run_reordered(repaired, first, incomplete),
                )
            )
    return runs


# --- denpex ------------------------------------------------------------------------------------


def denpex_verdict(case: str) -> tuple[str, bool]:
    from denpex.hang_view import HangRequest, hang_from_paths

    root = HERE / case
    report = hang_from_paths(
        HangRequest(
            paths=[str(root / "dumps"), str(root / "logs")],
            capture_times_file=root / "capture_times.json",
        )
    )
    expected = json.loads((root / "expected.json").read_text())
    culprit = expected["culprit"]
    if not report.candidates:
        return "no hang evidence", culprit is None
    top = report.candidates[0]
    tied = [c for c in report.candidates if c.confidence == top.confidence]
    shown = "; ".join(
        f"{c.kind.value} {c.ranks} pg {c.process_group} seq {c.seq} ({c.confidence:.2f})"
        for c in tied
    )
    if culprit is None:
        return shown, False

    def right(candidate: object) -> bool:
        return (
            candidate.kind.value == culprit["kind"]  # type: ignore[attr-defined]
            and candidate.ranks == culprit["ranks"]  # type: ignore[attr-defined]
        )

    correct = (
        any(right(c) for c in tied) if expected.get("ambiguous") else right(top) and len(tied) == 1
    )
    return shown, correct


def fr_trace_right(verdict: str, expected: dict) -> bool:
    """Whether torchfrtrace's first conclusion names exactly the culprit's ranks (any of its
    conclusions, where the case is ambiguous; nothing, for the healthy control). Stopping with
    an error is not a conclusion."""
    culprit = expected["culprit"]
    clauses = verdict.split(" (exit")[0].split("; ")
    if culprit is None:
        return clauses[0] == "nothing reported" or clauses[0].endswith("'No errors found'")
    for clause in clauses if expected.get("ambiguous") else clauses[:1]:
        if clause.startswith("stops:") or "cannot decide" in clause:
            continue
        named = re.search(r"(?:missing ranks: \{|culprit rank\(s\) )([\d, ]+)", clause)
        if named and sorted(int(r) for r in re.findall(r"\d+", named.group(1))) == culprit["ranks"]:
            return True
    return False


def stored_runs(case: str) -> list[FrRun]:
    """The runs `--write` stored in the case's torchfrtrace.txt."""
    text = (HERE / case / "torchfrtrace.txt").read_text()
    runs = []
    for block in text.split("===== torchfrtrace ")[1:]:
        header, _, output = block.partition("\n")
        found = re.fullmatch(r"(.*) \(exit (-?\d+)\)", header)
        if found is None:
            continue
        label, code = found.groups()
        runs.append(FrRun(label, int(code), output))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="store torchfrtrace.txt per case")
    parser.add_argument(
        "--stored", action="store_true", help="summarise the stored outputs instead of rerunning"
    )
    args = parser.parse_args()
    cases = sorted(p.name for p in HERE.iterdir() if (p / "expected.json").is_file())
    print(
        "| case | truth | denpex | torchfrtrace, raw dumps | torchfrtrace, repaired dumps "
        "(its own read order) | repaired, rank 0 read first | repaired, highest rank read first |"
    )
    print("|---|---|---|---|---|---|---|")
    score = {"denpex": 0, "raw": 0, "repaired": 0, "lowest": 0, "highest": 0}
    for case in cases:
        expected = json.loads((HERE / case / "expected.json").read_text())
        culprit = expected["culprit"]
        truth = "none" if culprit is None else f"{culprit['kind']} {culprit['ranks']}"
        shown, correct = denpex_verdict(case)
        runs = {r.label: r for r in (stored_runs(case) if args.stored else fr_trace_runs(case))}
        repaired = runs.get("repaired --allow-incomplete-ranks") or runs["repaired"]
        cells = {
            "raw": runs["raw"],
            "repaired": repaired,
            "lowest": runs["repaired, lowest rank read first"],
            "highest": runs["repaired, highest rank read first"],
        }
        marks = {key: fr_trace_right(run.verdict, expected) for key, run in cells.items()}
        score["denpex"] += correct
        for key, right in marks.items():
            score[key] += right
        row = [case, truth, f"{'✓' if correct else '✗'} {shown}"]
        row += [f"{'✓' if marks[k] else '✗'} {cells[k].verdict}" for k in cells]
        print("| " + " | ".join(row) + " |")
        if args.write and not args.stored:
            text = "\n".join(
                f"===== torchfrtrace {r.label} (exit {r.exit_code})\n{r.output}"
                for r in runs.values()
            )
            (HERE / case / "torchfrtrace.txt").write_text(text)
    total = len(cases)
    print(
        f"| **right** | | **{score['denpex']}/{total}** | {score['raw']}/{total} | "
        f"{score['repaired']}/{total} | {score['lowest']}/{total} | {score['highest']}/{total} |"
    )
    shutil.rmtree(HERE / "__pycache__", ignore_errors=True)


if __name__ == "__main__":
    main()
