"""Format string -> signature pattern: literal text stays literal, placeholders become captures.

Consumes one message's format text and style (`printf`, `fmt`/`brace`, `fstring`, `angle`,
`literal`);
produces a `Converted` pattern (regex, the parsed pieces, the capture names) or raises `Unsafe`
with the reason the message cannot be matched safely (too generic, no stable literal, does not
compile in both backends).

Rules: every literal character is escaped; each placeholder becomes a bounded group of the
characters its conversion can print (`%d` -> `-?\\d+`, `%x` -> hex digits, `%s` -> `.*?`, or
`[^']*` between quotes); a placeholder is a *named* capture only when the words around it say
what it is (`rank %d`, `%zu bytes`, `pid %d`); placeholders at either end are trimmed, since a
search needs no anchor there. Patterns never span lines: a multi-line message keeps its most
distinctive line, and its opening line as well (`opening`) when that is specific alone.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from catalogs.core.message import Style
from denpex.signatures.backends import PatternSpec, available_backends, make_scanner
from denpex.signatures.keywords import required_literals


class Unsafe(ValueError):
    """The message cannot become a safe pattern; the text is the reason, recorded as written."""


TOO_GENERIC = "too generic to match safely"


@dataclass(frozen=True, slots=True)
class Placeholder:
    kind: str
    """int | hex | oct | float | ptr | char | str | quoted"""
    spec: str
    """the placeholder as written, e.g. %zu, {:x}, {self.rank!r}"""
    name: str | None = None
    """the capture name when the surrounding words say what the value is"""
    closer: str = ""
    """for kind `quoted`: the character that ends the value"""
    body: str = ""
    """the regex its value is matched by, when a `NameRule` says it (else its kind's)"""
    value: str = ""
    """the value rendered examples carry, when a `NameRule` says it"""


Piece = str | Placeholder


@dataclass(frozen=True, slots=True)
class Converted:
    regex: str
    pieces: tuple[Piece, ...]
    """the pieces the regex was built from, after trimming"""
    line: tuple[Piece, ...]
    """the whole line of the message the pattern comes from (what the renderer fills)"""
    captures: tuple[str, ...] = field(default=())


# Words next to a placeholder that say what the value is -> the conventional capture name
# (rules/README.md). `rank` in most emitters is a communicator- or group-local rank, so it is
# `pg_rank` unless an emitter's source.yaml says (captures: {rank: rank}) that it is global.
DEFAULT_CAPTURES_BEFORE: dict[str, str] = {
    "rank": "pg_rank",
    "peer": "peer_rank",
    "pid": "pid",
    "xid": "xid",
    "errno": "errno",
    "port": "port",
    "seq": "seq",
    "seqnum": "seq",
    "opcount": "seq",
}
DEFAULT_CAPTURES_AFTER: dict[str, str] = {"bytes": "bytes", "ms": "timeout_ms"}


@dataclass(frozen=True, slots=True)
class NameRule:
    """A placeholder no word next to it names (Open MPI's "[%s:%05d] " prefix: host and pid),
    named by the message text around it: the text before it (earlier placeholders as written,
    e.g. `%s`) ends with a match of `after`, and the text after it begins with one of `before`."""

    after: re.Pattern[str]
    before: re.Pattern[str] | None
    name: str
    body: str = ""
    value: str = ""


_INT = r"-?\d+"
_REGEX_OF_KIND = {
    "int": _INT,
    "hex": r"(?:0[xX])?[0-9a-fA-F]+",
    "oct": r"[0-7]+",
    "float": r"(?:-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|-?nan|-?inf)",
    "ptr": r"(?:0x[0-9a-fA-F]+|\(nil\)|0)",
    "char": r".",
    "str": r".*?",
}
_QUOTE_PAIRS = {"'": "'", '"': '"', "(": ")", "[": "]", "<": ">", "`": "`"}

# printf: %[flags][width][.precision][length]conversion
_PRINTF = re.compile(
    r"%(?P<flags>[-+ #0']*)(?P<width>\d+|\*)?(?:\.(?P<precision>\d+|\*))?"
    r"(?P<length>hh|h|ll|l|L|q|j|z|Z|t|I64|I32|I)?(?P<conv>[diouxXeEfFgGaAcspn%])"
)
_PRINTF_KIND = {
    **dict.fromkeys("diu", "int"),
    **dict.fromkeys("xX", "hex"),
    "o": "oct",
    **dict.fromkeys("eEfFgGaA", "float"),
    "c": "char",
    "s": "str",
    "p": "ptr",
}
_BRACE_KIND = {
    **dict.fromkeys("dnbc", "int"),
    **dict.fromkeys("xX", "hex"),
    "o": "oct",
    **dict.fromkeys("eEfFgG%", "float"),
    "p": "ptr",
}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def parse(text: str, style: Style) -> list[Piece]:
    """The format text as alternating literal strings and placeholders (names not yet set)."""
    if style == "literal":
        return [text] if text else []
    if style == "printf":
        return _parse_printf(text)
    if style in ("fmt", "brace", "fstring"):
        return _parse_braces(text, fstring=style == "fstring")
    if style == "angle":
        return _parse_angles(text)
    raise ValueError(f"unknown style {style!r}")


def _parse_printf(text: str) -> list[Piece]:
    pieces: list[Piece] = []
    position = 0
    for found in _PRINTF.finditer(text):
        literal = text[position : found.start()]
        position = found.end()
        conv = found["conv"]
        if conv == "%":
            pieces.append(literal + "%")
            continue
        if conv == "n":
            pieces.append(literal)
            continue
        pieces.append(literal)
        pieces.append(Placeholder(kind=_PRINTF_KIND[conv], spec=found.group(0)))
    pieces.append(text[position:])
    return _merge_literals(pieces)


def _parse_braces(text: str, fstring: bool) -> list[Piece]:
    pieces: list[Piece] = []
    literal: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char in "{}" and text[index : index + 2] in ("{{", "}}"):
            literal.append(char)
            index += 2
            continue
        if char != "{":
            literal.append(char)
            index += 1
            continue
        end = _closing_brace(text, index)
        if end < 0:  # an unbalanced brace is printed as it stands
            literal.append(text[index:])
            break
        pieces.append("".join(literal))
        literal = []
        pieces.append(_brace_placeholder(text[index : end + 1], fstring))
        index = end + 1
    pieces.append("".join(literal))
    return _merge_literals(pieces)


# Apache Spark's error-condition templates: `<name>` is a parameter, substituted as a string
# (ErrorClassesJsonReader replaces `<([a-zA-Z0-9_-]+)>`; any other `<` is printed as it stands).
_ANGLE = re.compile(r"<([a-zA-Z0-9_-]+)>")


def _parse_angles(text: str) -> list[Piece]:
    pieces: list[Piece] = []
    position = 0
    for found in _ANGLE.finditer(text):
        pieces.append(text[position : found.start()])
        pieces.append(Placeholder(kind="str", spec=found.group(0), name=found.group(1)))
        position = found.end()
    pieces.append(text[position:])
    return _merge_literals(pieces)


def _closing_brace(text: str, start: int) -> int:
    depth = 0
    quote = ""
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if char == quote:
                quote = ""
            continue
        if char in "'\"" and depth > 0:
            quote = char
        elif char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
            if depth == 0:
                return index if char == "}" else -1
    return -1


def _brace_placeholder(spec: str, fstring: bool) -> Placeholder:
    inner = spec[1:-1]
    expression, conversion, format_spec = inner, "", ""
    # The format spec follows the last top-level ':' (f-string expressions may hold ':' in
    # slices or dict literals, which sit inside brackets).
    depth = 0
    for index, char in enumerate(inner):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == ":" and depth == 0 and inner[index + 1 : index + 2] != "=":
            expression, format_spec = inner[:index], inner[index + 1 :]
            break
    if "!" in expression and not expression.rstrip().endswith("!="):
        expression, _, conversion = expression.rpartition("!")
    expression = expression.strip().rstrip("=")
    conv_type = format_spec[-1:] if format_spec else ""
    kind = _BRACE_KIND.get(conv_type, "str")
    if conversion == "r":
        kind = "str"
    name = expression if fstring or _IDENTIFIER.match(expression) else ""
    return Placeholder(kind=kind, spec=spec, name=name.split(".")[-1] or None)


def _merge_literals(pieces: list[Piece]) -> list[Piece]:
    """Adjacent literals joined; placeholders with no literal between them (`%s%s`, often
    optional suffixes) become one string placeholder, since no boundary separates them."""
    merged: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str):
            if not piece:
                continue
            if merged and isinstance(merged[-1], str):
                merged[-1] += piece
                continue
        elif merged and isinstance(merged[-1], Placeholder):
            merged[-1] = Placeholder(kind="str", spec=merged[-1].spec + piece.spec)
            continue
        merged.append(piece)
    return merged


def _literal_size(line: list[Piece]) -> int:
    return sum(len(p.strip()) for p in line if isinstance(p, str))


def _lines(pieces: list[Piece]) -> list[list[Piece]]:
    """The message's lines: a pattern matches within one line, and keeps the line with the
    most literal text."""
    lines: list[list[Piece]] = [[]]
    for piece in pieces:
        if isinstance(piece, str) and "\n" in piece:
            parts = piece.split("\n")
            lines[-1].append(parts[0])
            lines.extend([part] for part in parts[1:])
        else:
            lines[-1].append(piece)
    return [_merge_literals(line) for line in lines]


def _trim(pieces: list[Piece]) -> list[Piece]:
    """Placeholders and blank space at either end say nothing a search needs."""
    pieces = list(pieces)
    while pieces and (not isinstance(pieces[0], str) or not pieces[0].strip()):
        pieces.pop(0)
    while pieces and (not isinstance(pieces[-1], str) or not pieces[-1].strip()):
        pieces.pop()
    if pieces:
        pieces[0] = pieces[0].lstrip()  # type: ignore[union-attr]
        pieces[-1] = pieces[-1].rstrip()  # type: ignore[union-attr]
    return pieces


def _neighbour_word(text: str, before: bool) -> str:
    words = _WORD.findall(text)
    if not words:
        return ""
    word = words[-1] if before else words[0]
    # Only a word right next to the placeholder names it ("rank %d", "%zu bytes"), not one
    # across other punctuation than ' ', '=', ':' and '#'.
    gap = text[text.rfind(word) + len(word) :] if before else text[: text.find(word)]
    return word.lower() if re.fullmatch(r"[ =:#]*", gap) else ""


def _spelt(pieces: Sequence[Piece]) -> str:
    """Pieces as the format wrote them: literals, and placeholders as their spec (`%s`)."""
    return "".join(p if isinstance(p, str) else p.spec for p in pieces)


def _rule_for(pieces: list[Piece], index: int, rules: Sequence[NameRule]) -> NameRule | None:
    head, tail = _spelt(pieces[:index]), _spelt(pieces[index + 1 :])
    for rule in rules:
        if rule.after.search(head) and (rule.before is None or rule.before.match(tail)):
            return rule
    return None


def _named(
    pieces: list[Piece],
    before_names: Mapping[str, str],
    after_names: Mapping[str, str],
    rules: Sequence[NameRule] = (),
) -> list[Piece]:
    named: list[Piece] = []
    used: set[str] = set()
    for index, piece in enumerate(pieces):
        if isinstance(piece, str):
            named.append(piece)
            continue
        rule = _rule_for(pieces, index, rules) if rules else None
        if rule is not None and rule.name not in used:
            used.add(rule.name)
            named.append(
                Placeholder(
                    kind=piece.kind if piece.kind != "quoted" else "str",
                    spec=piece.spec,
                    name=rule.name,
                    body=rule.body,
                    value=rule.value,
                )
            )
            continue
        before = pieces[index - 1] if index > 0 else ""
        after = pieces[index + 1] if index + 1 < len(pieces) else ""
        word_before = _neighbour_word(before, True) if isinstance(before, str) else ""
        word_after = _neighbour_word(after, False) if isinstance(after, str) else ""
        name: str | None = None
        untyped = piece.kind == "str" and piece.spec.startswith("{") and not piece.name
        if untyped and (after_names.get(word_after) or before_names.get(word_before)):
            piece = Placeholder(kind="int", spec=piece.spec)  # "rank {}" prints a number
        if piece.kind in ("int", "hex"):
            name = after_names.get(word_after) or before_names.get(word_before)
            if name == "timeout_ms" and "timeout" not in before.lower():
                name = None  # "12 ms" alone is a duration, not a timeout
        elif piece.name:  # a brace or f-string field name that is a known capture
            candidate = piece.name.lower()
            name = candidate if candidate in set(before_names.values()) else None
        if name is not None and name in used:
            name = None
        if name is not None:
            used.add(name)
        closer = ""
        if piece.kind == "str" and isinstance(before, str) and isinstance(after, str):
            opener = before[-1:]
            if opener in _QUOTE_PAIRS and after[:1] == _QUOTE_PAIRS[opener]:
                closer = _QUOTE_PAIRS[opener]
        named.append(
            Placeholder(
                kind="quoted" if closer else piece.kind, spec=piece.spec, name=name, closer=closer
            )
        )
    return named


def placeholder_regex(placeholder: Placeholder) -> str:
    if placeholder.body:
        body = placeholder.body
    elif placeholder.kind == "quoted":
        body = f"[^{re.escape(placeholder.closer)}\\n]*"
    else:
        body = _REGEX_OF_KIND[placeholder.kind]
    if placeholder.name:
        return f"(?P<{placeholder.name}>{body})"
    return body if placeholder.kind in ("char", "int", "oct", "str", "quoted") else f"(?:{body})"


def literal_regex(text: str) -> str:
    """Literal text, escaped so that both backends read it as those characters."""
    return "".join(_escape_char(char) for char in text)


_META = frozenset(".^$*+?()[]{}|\\#")


def _escape_char(char: str) -> str:
    # A character beyond ASCII is written as itself: the scanner compiles the UTF-8 of the
    # pattern, which matches the same bytes, while the confirming `re` works on text, where a
    # byte escape such as \xc3 names a different character and never matches.
    if char.isascii() and not char.isprintable():
        return f"\\x{ord(char):02x}"
    return "\\" + char if char in _META else char


MIN_WORDS = 3
"""Words of three or more letters a message needs to be matched alone."""


_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]'\"`])\.\s+(?=[A-Z])")
FIRST_SENTENCE_WORDS = 5
FIRST_SENTENCE_CHARS = 30


def _first_sentence(message: list[Piece]) -> list[Piece]:
    """A message of several sentences is matched by its first when that alone is specific (five
    words, thirty letters): older releases often printed only it before a hint was added, and
    posted excerpts cut after it; the full line still matches. The message stays whole when a
    later sentence holds a named capture."""
    for index, piece in enumerate(message):
        if not isinstance(piece, str):
            continue
        found = _SENTENCE_END.search(piece)
        if found is None:
            continue
        head = [*message[:index], piece[: found.start() + 1]]
        if any(isinstance(p, Placeholder) and p.name for p in message[index + 1 :]):
            return message
        literal = "".join(p for p in head if isinstance(p, str))
        if (
            len(re.findall(r"[A-Za-z]{3,}", literal)) < FIRST_SENTENCE_WORDS
            or len(re.sub(r"\s", "", literal)) < FIRST_SENTENCE_CHARS
        ):
            return message
        return _merge_literals(head)
    return message


_FINAL_PERIOD = re.compile(r"(?<=[A-Za-z0-9)\]'\"`])\.$")
CLOSING = r"(?:\.|\s*$)"
"""What stands for a message's closing full stop: the stop, or the end of the line. Posters
trim the stop when they quote a line; the line still has to end there, so "X is not supported."
does not match "X is not supported with Y"."""


def _without_final_period(message: list[Piece]) -> tuple[list[Piece], str]:
    """The message less its closing full stop, and the regex that stands for it."""
    if message and isinstance(message[-1], str) and _FINAL_PERIOD.search(message[-1]):
        return _merge_literals([*message[:-1], message[-1][:-1]]), CLOSING
    return message, ""


def _check_specific(pieces: list[Piece], regex: str, anchored: bool, min_words: int) -> None:
    """Alone, a message needs `min_words` words (three unless its emitter says otherwise) and
    twelve literal characters to be told from other programs' lines ("close failed: %s" is
    not); after its emitter's own prefix (`anchor`), one word of six characters will do."""
    literal = "".join(p for p in pieces if isinstance(p, str))
    words = re.findall(r"[A-Za-z]{3,}", literal)
    chars = len(re.sub(r"\s", "", literal))
    if anchored and (not words or chars < 6):
        raise Unsafe(TOO_GENERIC)
    if not anchored and (len(words) < min_words or chars < 12):
        raise Unsafe(TOO_GENERIC)
    if not required_literals(regex):
        raise Unsafe("no literal of 4+ characters that every match contains")


def convert(
    text: str,
    style: Style,
    captures_before: Mapping[str, str] | None = None,
    captures_after: Mapping[str, str] | None = None,
    anchor: str = "",
    anchor_regex: str = "",
    min_words: int = MIN_WORDS,
    names: Sequence[NameRule] = (),
) -> Converted:
    """The pattern for one message; raises `Unsafe` when it cannot be matched safely.

    `anchor` is the literal text the emitter prints right before its messages (NCCL's
    "NCCL WARN "); a message too generic alone is matched after it. `anchor_regex`, when
    given, stands for the anchor in the pattern: the prefix's other spellings (builds that
    print "WARN " without "NCCL " after the same "[dev] file:line "). `min_words`: see
    `_check_specific`. `names`: placeholders named by the text around them (`NameRule`)."""
    before_names = {**DEFAULT_CAPTURES_BEFORE, **(captures_before or {})}
    after_names = {**DEFAULT_CAPTURES_AFTER, **(captures_after or {})}
    lines = _lines(parse(text, style))
    best = max(range(len(lines)), key=lambda i: _literal_size(lines[i]))
    line = _named(lines[best], before_names, after_names, names)
    message, closing = _without_final_period(_first_sentence(_trim(line)))
    try:
        return _converted(
            line, message, message, anchored=False, min_words=min_words, closing=closing
        )
    except Unsafe as unsafe:
        # Only a message's first line follows the emitter's prefix.
        if not anchor or str(unsafe) != TOO_GENERIC or best != 0 or not message:
            raise
    after = list(line)
    while after and (not isinstance(after[-1], str) or not after[-1].strip()):
        after.pop()
    after[-1] = after[-1].rstrip()  # type: ignore[union-attr]
    pieces = _merge_literals([anchor, *after])
    return _converted(
        line, pieces, message, anchored=True, min_words=min_words, lead=(anchor_regex, after)
    )


OPENING_WORDS = 4
"""Words the opening line of a multi-line message needs to be matched alone (one more than a
message's default: it stands beside the message's most distinctive line, not for it)."""


def opening(
    text: str,
    style: Style,
    captures_before: Mapping[str, str] | None = None,
    captures_after: Mapping[str, str] | None = None,
    min_words: int = MIN_WORDS,
    names: Sequence[NameRule] = (),
) -> Converted | None:
    """The pattern of a multi-line message's first line, when `convert` chose a later one and
    the first is specific alone; else None.

    A paste keeps the top of a message far more often than its middle (the header sentence,
    then the hint, is what posters quote, and what a terminal scrolled past still shows), and
    the top is also what releases reword least: Open MPI 4.0 and 4.1 wrap the same help text
    at different words, so its longest line in one release is split in the other, while the
    first line reads alike in both."""
    before_names = {**DEFAULT_CAPTURES_BEFORE, **(captures_before or {})}
    after_names = {**DEFAULT_CAPTURES_AFTER, **(captures_after or {})}
    lines = _lines(parse(text, style))
    if len(lines) < 2:
        return None
    best = max(range(len(lines)), key=lambda i: _literal_size(lines[i]))
    first = next((i for i, line in enumerate(lines) if _literal_size(line)), None)
    if first is None or first == best:
        return None
    line = _named(lines[first], before_names, after_names, names)
    message, closing = _without_final_period(_first_sentence(_trim(line)))
    try:
        return _converted(
            line,
            message,
            message,
            anchored=False,
            min_words=max(min_words, OPENING_WORDS),
            closing=closing,
        )
    except Unsafe:
        return None


def _converted(
    line: list[Piece],
    pieces: list[Piece],
    message: list[Piece],
    anchored: bool,
    min_words: int = MIN_WORDS,
    lead: tuple[str, list[Piece]] | None = None,
    closing: str = "",
) -> Converted:
    """`lead`, for an anchored message, is the anchor's regex and the pieces that follow it;
    without a regex the anchor is matched as the literal text it is in `pieces`. `closing`
    ends the regex (see CLOSING)."""
    if not pieces or not message:
        raise Unsafe(TOO_GENERIC)
    prefix, rest = (lead[0], lead[1]) if lead and lead[0] else ("", pieces)
    regex = (
        prefix
        + "".join(literal_regex(p) if isinstance(p, str) else placeholder_regex(p) for p in rest)
        + closing
    )
    _check_specific(message, regex, anchored, min_words)
    names = tuple(p.name for p in pieces if isinstance(p, Placeholder) and p.name)
    return Converted(regex=regex, pieces=tuple(pieces), line=tuple(line), captures=names)


def _literal_chars(pieces: Sequence[Piece]) -> int:
    return sum(len(re.sub(r"\s", "", p)) for p in pieces if isinstance(p, str))


def _tokens(pieces: Sequence[Piece]) -> list[Piece]:
    """A message as single characters and placeholders, for comparing two wordings."""
    tokens: list[Piece] = []
    for piece in pieces:
        tokens.extend(piece if isinstance(piece, str) else [piece])
    return tokens


def _token_key(token: Piece) -> str | tuple[str, str | None, str]:
    return token if isinstance(token, str) else (token.kind, token.name, token.closer)


def _in_word(token: Piece | None) -> bool:
    return isinstance(token, str) and (token.isalnum() or token == "_")


_TAG = re.compile(r"^\s*(?:\S+\s+){0,2}\S*:\s*$|^[^A-Za-z]*$")
"""A message's leading tag: up to three words ending in a colon ("Net : ", "ncclSocketInit: ",
"NET/IB: %s: ") or no letters at all ("%s:%d ")."""


@dataclass(frozen=True, slots=True)
class Shared:
    pieces: list[Piece]
    """the run both wordings print, cut to whole words where it meets text they do not share"""
    reworded: bool
    """the wordings are one message reworded: one contains the other whole, or they differ
    only in a leading tag"""


def _text(tokens: Sequence[Piece]) -> str:
    return "".join(t if isinstance(t, str) else "%" for t in tokens)


def shared_part(first: Sequence[Piece], second: Sequence[Piece]) -> Shared:
    """The longest run of text and placeholders two wordings of a message both print, cut back
    to whole words where it meets text they do not share ("Net : Socket creation failed : %s"
    and "ncclSocketInit: Socket creation failed : %s" share "Socket creation failed :")."""
    sequences = (_tokens(first), _tokens(second))
    keys = [[_token_key(t) for t in tokens] for tokens in sequences]
    found = difflib.SequenceMatcher(None, keys[0], keys[1], autojunk=False).find_longest_match(
        0, len(keys[0]), 0, len(keys[1])
    )
    placed = ((sequences[0], found.a), (sequences[1], found.b))
    core = sequences[0][found.a : found.a + found.size]

    def token(sequence: list[Piece], index: int) -> Piece | None:
        return sequence[index] if 0 <= index < len(sequence) else None

    def word_starts(offset: int) -> bool:
        return _in_word(core[offset]) and not any(
            _in_word(token(seq, at + offset - 1)) for seq, at in placed
        )

    def word_ends(offset: int) -> bool:
        return _in_word(core[offset - 1]) and not any(
            _in_word(token(seq, at + offset)) for seq, at in placed
        )

    # Where the run meets text the wordings do not share, it begins and ends on whole words.
    starts_both = all(at == 0 for _, at in placed)
    ends_both = all(at + len(core) == len(seq) for seq, at in placed)
    begin, end = 0, len(core)
    if not starts_both:
        while begin < end and not word_starts(begin):
            begin += 1
    if not ends_both:
        while end > begin and not word_ends(end):
            end -= 1
    # One wording whole inside the other, and not cut inside a word ("port" in "port_num").
    cut = [*core[:begin], *core[end:]]
    contained = any(len(core) == len(seq) for seq in sequences) and not any(map(_in_word, cut))
    retagged = ends_both and all(_TAG.match(_text(seq[: at + begin])) for seq, at in placed)
    pieces = _trim(_merge_literals(list(core[begin:end])))
    return Shared(pieces, reworded=contained or retagged)


def shared_pattern(wordings: Sequence[Converted], min_share: float) -> Converted:
    """One pattern for several wordings of one message: the part all of them print alike, when
    they are one message reworded (`Shared.reworded`), that part is at least `min_share` of
    each one's literal text, and it is specific enough alone by the default standard
    (`MIN_WORDS`, whatever the emitter's own); raises `Unsafe` otherwise. A line in any of the
    wordings matches it."""
    messages = [_trim(list(wording.line)) for wording in wordings]
    core = messages[0]
    for message in messages[1:]:
        shared = shared_part(core, message)
        if not shared.reworded:
            raise Unsafe("different messages, not one reworded")
        core = shared.pieces
    size = _literal_chars(core)
    if not core or any(size < min_share * _literal_chars(message) for message in messages):
        raise Unsafe("the wordings share too little text")
    # Cut as one wording's pattern is: at its first sentence when that is specific alone, and
    # with the closing full stop optional.
    core, closing = _without_final_period(_first_sentence(core))
    return _converted(list(wordings[0].line), core, core, anchored=False, closing=closing)


def compile_problems(regexes: list[str]) -> dict[str, str]:
    """Regexes that a backend refuses, with the reason; both backends are tried on all at once
    and only on failure one by one, so a catalog of thousands compiles in one pass."""
    problems: dict[str, str] = {}
    for regex in regexes:
        try:
            re.compile(regex, re.ASCII)
        except re.error as error:
            problems[regex] = f"re cannot compile it: {error}"
    rest = [r for r in regexes if r not in problems]
    for backend in available_backends():
        if backend == "re" or not rest:
            continue
        try:
            make_scanner([PatternSpec(r, False, ()) for r in rest], backend)
        except Exception:
            for regex in rest:
                try:
                    make_scanner([PatternSpec(regex, False, ())], backend)
                except Exception as error:
                    problems[regex] = f"{backend} cannot compile it: {error}"
    return problems
