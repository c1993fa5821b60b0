"""`python -m catalogs generate <emitter> --checkout DIR [--release LINE] [--diff REF]`.

generate: extracts the messages of every pinned release line (or only `--release`, keeping the
other lines as recorded in CATALOG.json), applies the reviewed mapping and writes the family's
signatures and CATALOG.json. `--recorded` extracts nothing: it applies the mapping and the
generator to the messages CATALOG.json records for every line, so a reviewed mapping (or a
generator change) takes effect without the pinned sources at hand. `--diff REF` writes
nothing: it prints what REF adds, drops and rewords against the newest pinned line.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from pathlib import Path

from catalogs.core.generate import (
    Catalog,
    build_signatures,
    classify,
    exclude_python_wordings,
    mark_hand_written,
    merge_releases,
    merge_rewordings,
)
from catalogs.core.mapping import load_mapping
from catalogs.core.message import Message
from catalogs.core.source import (
    emitter_dir,
    load_extractor,
    load_source,
    release_tree,
)
from catalogs.core.writer import CATALOG_FILE, read_lock, write_catalog
from denpex.match.scan import Matcher
from denpex.signatures.library import (
    CATALOG_SUFFIX,
    Library,
    library_of,
    load_library,
    load_signature,
)

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "rules"


def generate(
    emitter: str, checkout: Path | None, release: str | None = None, rules_dir: Path = RULES_DIR
) -> tuple[Catalog, list[Path]]:
    """Write the family's signatures and CATALOG.json; with no checkout, from the messages
    CATALOG.json records for every release line."""
    folder = emitter_dir(emitter)
    spec = load_source(folder)
    mapping = load_mapping(folder / "mapping.yaml")
    extract = load_extractor(folder)
    lines = spec.line_names()
    refs = {r.line: r.ref for r in spec.releases}
    if release is not None and release not in refs:
        raise ValueError(f"{release!r} is not a release line of {emitter}: {', '.join(lines)}")
    found: dict[str, list[Message]] = {}
    if release is not None or checkout is None:
        found = read_lock(rules_dir / mapping.family / CATALOG_FILE, spec.emitter)
    if checkout is None and not found:
        raise ValueError(f"rules/{mapping.family}/{CATALOG_FILE} records no messages to re-map")
    for pinned in spec.releases:
        if checkout is None or (release is not None and pinned.line != release):
            continue
        with release_tree(checkout, pinned.ref, spec.paths) as tree:
            found[pinned.line] = list(extract(tree, pinned.line))
    entries = merge_releases(found, lines)
    classify(entries, spec, mapping)
    hand = load_library(rules_dir, include_catalogs=False)
    mark_hand_written(entries, Matcher(hand, "auto"), spec)
    if spec.covered_by:
        covering = family_library(rules_dir, spec.covered_by, mapping.family)
        mark_hand_written(entries, Matcher(covering, "auto"), spec, "catalog")
    merge_rewordings(entries, spec)
    exclude_python_wordings(entries)
    signatures = build_signatures(entries, spec, mapping, refs)
    catalog = Catalog(spec.emitter, mapping.family, lines, refs, entries, signatures)
    return catalog, write_catalog(catalog, rules_dir)


def family_library(rules_dir: Path, families: Sequence[str], own: str) -> Library:
    """The generated signatures of `families` (source.yaml `covered_by`), as one library."""
    signatures = []
    for family in families:
        folder = rules_dir / family
        if family == own or not family.endswith(CATALOG_SUFFIX) or not folder.is_dir():
            raise ValueError(
                f"covered_by: {family!r} is not another generated family in {rules_dir}"
            )
        signatures += [load_signature(path, rules_dir) for path in sorted(folder.glob("*.yaml"))]
    return library_of(signatures)


def diff(emitter: str, checkout: Path, ref: str, rules_dir: Path = RULES_DIR) -> list[str]:
    """What `ref` prints that the newest pinned line does not, and the reverse."""
    folder = emitter_dir(emitter)
    spec = load_source(folder)
    mapping = load_mapping(folder / "mapping.yaml")
    newest = spec.releases[-1]
    pinned = read_lock(rules_dir / mapping.family / CATALOG_FILE, spec.emitter).get(newest.line)
    extract = load_extractor(folder)
    if pinned is None:
        with release_tree(checkout, newest.ref, spec.paths) as tree:
            pinned = list(extract(tree, newest.line))
    with release_tree(checkout, ref, spec.paths) as tree:
        fresh = list(extract(tree, ref))
    return diff_messages(pinned, fresh, newest.line, ref)


def diff_messages(
    old: Sequence[Message], new: Sequence[Message], old_name: str, new_name: str
) -> list[str]:
    old_texts = {m.text: m for m in old}
    new_texts = {m.text: m for m in new}
    added = sorted(set(new_texts) - set(old_texts))
    dropped = sorted(set(old_texts) - set(new_texts))
    reworded: list[tuple[str, str]] = []
    for text in list(dropped):
        close = difflib.get_close_matches(text, added, n=1, cutoff=0.75)
        if close:
            reworded.append((text, close[0]))
            dropped.remove(text)
            added.remove(close[0])
    out = [
        f"{new_name} against {old_name}: {len(added)} added, {len(dropped)} dropped, "
        f"{len(reworded)} reworded"
    ]
    out += [f"+ {new_texts[t].file}:{new_texts[t].line}  {t}" for t in added]
    out += [f"- {old_texts[t].file}:{old_texts[t].line}  {t}" for t in dropped]
    for before, after in reworded:
        out += [f"~ {old_texts[before].file}  {before}", f"  -> {new_texts[after].file}  {after}"]
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m catalogs", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate", help="write rules/<emitter>_cat from the pinned source")
    gen.add_argument("emitter")
    where = gen.add_mutually_exclusive_group(required=True)
    where.add_argument("--checkout", type=Path, help="git work tree, git dir or tree")
    where.add_argument(
        "--recorded",
        action="store_true",
        help="re-map the messages CATALOG.json records (no checkout)",
    )
    gen.add_argument("--release", help="refresh only this release line")
    gen.add_argument("--diff", metavar="REF", help="print what REF changes; write nothing")
    gen.add_argument("--rules", type=Path, default=RULES_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.checkout is not None and not args.checkout.exists():
        print(f"catalogs: {args.checkout} does not exist", file=sys.stderr)
        sys.exit(2)
    if args.recorded and (args.release or args.diff):
        print("catalogs: --recorded takes no --release or --diff", file=sys.stderr)
        sys.exit(2)
    try:
        if args.diff:
            print("\n".join(diff(args.emitter, args.checkout, args.diff, args.rules)))
            return
        catalog, changed = generate(args.emitter, args.checkout, args.release, args.rules)
    except ValueError as error:
        print(f"catalogs: {error}", file=sys.stderr)
        sys.exit(2)
    total = len(catalog.entries)
    mapped = sum(e.disposition == "mapped" for e in catalog.entries)
    context = sum(e.disposition == "context" for e in catalog.entries)
    print(
        f"{catalog.emitter}: {total} messages, {mapped} mapped, {context} context, "
        f"{total - mapped - context} excluded; {len(catalog.signatures)} signatures in "
        f"rules/{catalog.family}; {len(changed)} file(s) changed"
    )
