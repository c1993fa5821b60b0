"""Timestamps at the head of a log message, in the formats distributed jobs print.

Consumes one message (launcher prefixes already removed); produces a `Stamp`: seconds since the
epoch on the printing host's clock (naive times are read as UTC), or seconds since boot for
plain dmesg, or nothing. Formats: ISO 8601 / RFC 3339, Python logging (`2024-05-01 12:00:00,123`),
torchelastic's `2024-05-01_12:00:00`, glog (`E1218 20:27:21.426415`, no year), vLLM's logger
(`ERROR 02-17 14:48:01`, no year), syslog (`May  1 12:00:00`, no year), `dmesg -T` and `dmesg`
seconds since boot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

_MONTHS = {
    m: i
    for i, m in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}
_MONTH = r"(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_FRACTION = r"(?:[.,](?P<frac>\d{1,9}))?"
_HEAD = 64  # a timestamp further into the line than this belongs to the message, not the log

_ISO = re.compile(
    r"(?<!\d)(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})[T _]"
    r"(?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})" + _FRACTION + r"(?P<tz>Z|[+-]\d{2}:?\d{2})?"
)
_GLOG = re.compile(
    # c10's own logging (torch 2.4 and later) does not pad the month: `[W825 10:26:44.056376840`.
    r"(?:^|\[)[IWEF](?P<m>\d{1,2})(?P<d>\d{2}) (?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})" + _FRACTION
)
# vLLM's logging format: "%(levelname)s %(asctime)s" with datefmt "%m-%d %H:%M:%S".
_LEVEL_MONTH_DAY = re.compile(
    r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<m>\d{2})-(?P<d>\d{2}) "
    r"(?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})" + _FRACTION + r"\b"
)
_SYSLOG = re.compile(
    r"^" + _MONTH + r" {1,2}(?P<d>\d{1,2}) (?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})" + _FRACTION
)
_DMESG_T = re.compile(
    r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) "
    + _MONTH
    + r" {1,2}(?P<d>\d{1,2}) (?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2}) (?P<y>\d{4})\]"
)
_DMESG_BOOT = re.compile(r"^(?:<\d>)?\[\s*(?P<secs>\d+\.\d+)\]")
_CLOCK = re.compile(r"\d{2}:\d{2}:\d{2}")
"""What every format but `dmesg`'s seconds since boot holds: a time of day."""


@dataclass(frozen=True, slots=True)
class Stamp:
    epoch: float | None = None
    boot_seconds: float | None = None
    year_inferred: bool = False
    year: int | None = None

    @property
    def found(self) -> bool:
        return self.epoch is not None or self.boot_seconds is not None


NO_STAMP = Stamp()


def _fraction(text: str | None) -> float:
    return float(f"0.{text}") if text else 0.0


def _offset(tz: str | None) -> timezone:
    if not tz or tz == "Z":
        return UTC
    sign = -1 if tz[0] == "-" else 1
    digits = tz[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))


def _epoch(year: int, month: int, day: int, found: re.Match[str], tz: str | None = None) -> float:
    moment = datetime(
        year, month, day, int(found["H"]), int(found["M"]), int(found["S"]), tzinfo=_offset(tz)
    )
    return moment.timestamp() + _fraction(found.groupdict().get("frac"))


def parse_stamp(message: str, default_year: int) -> Stamp:
    """The timestamp heading `message`, or `NO_STAMP`. Invalid dates count as no timestamp."""
    head = message[:_HEAD]
    try:
        return _parse(head, default_year)
    except ValueError:  # 2024-02-30 and friends
        return NO_STAMP


def _parse(head: str, default_year: int) -> Stamp:
    if found := _DMESG_BOOT.match(head):
        return Stamp(boot_seconds=float(found["secs"]))
    if not _CLOCK.search(head):
        return NO_STAMP  # most lines print no time: one search says so, not six
    if found := _DMESG_T.match(head):
        year = int(found["y"])
        return Stamp(epoch=_epoch(year, _MONTHS[found["mon"]], int(found["d"]), found), year=year)
    if found := _SYSLOG.match(head):
        epoch = _epoch(default_year, _MONTHS[found["mon"]], int(found["d"]), found)
        return Stamp(epoch=epoch, year_inferred=True)
    if found := _GLOG.search(head):
        epoch = _epoch(default_year, int(found["m"]), int(found["d"]), found)
        return Stamp(epoch=epoch, year_inferred=True)
    if found := _LEVEL_MONTH_DAY.match(head):
        epoch = _epoch(default_year, int(found["m"]), int(found["d"]), found)
        return Stamp(epoch=epoch, year_inferred=True)
    if found := _ISO.search(head):
        year = int(found["y"])
        epoch = _epoch(year, int(found["m"]), int(found["d"]), found, found["tz"])
        return Stamp(epoch=epoch, year=year)
    return NO_STAMP


def to_datetime(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=UTC)
