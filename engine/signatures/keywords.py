"""Required literals of a regex: strings of which every match contains at least one.

Consumes a pattern string; produces the literal set. The scanner's pure-`re` backend uses it to
skip patterns whose literals are absent from a buffer, and the benchmark hands the same set to
`grep -F` as the fair baseline. A pattern with no usable literal returns an empty list, and the
lint asks its author for explicit `keywords`.
"""

from __future__ import annotations

import re
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]

MIN_KEYWORD_LENGTH = 4

_LITERAL = sre_constants.LITERAL
_SUBPATTERN = sre_constants.SUBPATTERN
_BRANCH = sre_constants.BRANCH
_AT = sre_constants.AT


def _literal_runs(items: list) -> list[str]:
    """Maximal runs of literal characters in a parsed sequence, descending into plain groups."""
    runs: list[str] = []
    current: list[str] = []

    def close() -> None:
        if current:
            runs.append("".join(current))
            current.clear()

    for op, arg in items:
        if op is _LITERAL:
            current.append(chr(arg))
        elif op is _AT:
            continue  # anchors such as ^ and \b take no characters
        elif op is _SUBPATTERN and _is_plain_sequence(arg[-1]):
            inner = _literal_runs(list(arg[-1]))
            if len(inner) == 1 and _is_all_literal(arg[-1]):
                current.append(inner[0])
            else:
                close()
                runs.extend(inner)
        else:
            close()
    close()
    return runs


def _is_plain_sequence(subpattern: sre_parse.SubPattern) -> bool:
    return not any(op is _BRANCH for op, _ in subpattern)


def _is_all_literal(subpattern: sre_parse.SubPattern) -> bool:
    return all(op is _LITERAL for op, _ in subpattern)


def _best_alternatives(items: list) -> list[str]:
    runs = _literal_runs(items)
    if runs:
        best = max(runs, key=len)
        if len(best) >= MIN_KEYWORD_LENGTH:
            return [best]
    # A single top-level alternation: every match contains one branch's literal.
    if len(items) == 1 and items[0][0] is _SUBPATTERN:
        items = list(items[0][1][-1])
    if len(items) == 1 and items[0][0] is _BRANCH:
        choices: list[str] = []
        for branch in items[0][1][1]:
            branch_best = _best_alternatives(list(branch))
            if not branch_best:
                return []
            choices.extend(branch_best)
        return sorted(set(choices))
    return []


def required_literals(regex: str) -> list[str]:
    """Literals of which every match of `regex` contains at least one, or [] if none found."""
    try:
        parsed = sre_parse.parse(regex)
    except re.error:
        return []
    if parsed.state.flags & re.IGNORECASE:
        return []
    return _best_alternatives(list(parsed))
