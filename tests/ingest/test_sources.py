"""Inputs of every shape, and bad inputs that must be reported without losing the rest."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from denpex.errors import InputError
from denpex.ingest.sources import Collector, iter_inputs
from tests.conftest import BAD_SAMPLE

RANK3_LOG = next(BAD_SAMPLE.glob("logs/*/attempt_0/3/stderr.log"))


def _read_all(
    paths: list[str], stdin: io.BytesIO | None = None
) -> tuple[dict[str, bytes], list[str]]:
    collector = Collector([])
    contents = {}
    for item in iter_inputs(paths, stdin, collector):
        with item.open() as stream:
            contents[item.name] = stream.read()
    return contents, collector.warnings


def test_a_directory_yields_every_file_in_a_stable_order() -> None:
    contents, warnings = _read_all([str(BAD_SAMPLE)])
    names = list(contents)
    assert names == sorted(names, key=lambda n: (n.count("/") > 1, n)) or len(names) == 9
    assert any(n.endswith("attempt_0/3/stderr.log") for n in names)
    assert warnings == []


def test_tar_gz_zip_and_gzip_inputs_read_the_same_bytes(tmp_path: Path) -> None:
    original = RANK3_LOG.read_bytes()
    with tarfile.open(tmp_path / "bundle.tar.gz", "w:gz") as archive:
        archive.add(RANK3_LOG, arcname="node01/rank3.log")
    with zipfile.ZipFile(tmp_path / "bundle.zip", "w") as archive:
        archive.write(RANK3_LOG, arcname="node01/rank3.log")
    (tmp_path / "rank3.log.gz").write_bytes(gzip.compress(original))
    for name in ("bundle.tar.gz", "bundle.zip", "rank3.log.gz"):
        contents, warnings = _read_all([str(tmp_path / name)])
        assert list(contents.values()) == [original], name
        assert warnings == []


def test_stdin_may_carry_an_archive(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(RANK3_LOG, arcname="rank3.log")
    contents, _ = _read_all(["-"], io.BytesIO(buffer.getvalue()))
    assert list(contents) == ["<stdin>!rank3.log"]


def test_member_names_that_escape_the_archive_are_reported_and_still_read(tmp_path: Path) -> None:
    payload = RANK3_LOG.read_bytes()
    with tarfile.open(tmp_path / "evil.tar", "w") as archive:
        for name in ("../../etc/cron.d/rank3.log", "/abs/rank1.log"):
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            archive.addfile(info, io.BytesIO(payload))
    contents, warnings = _read_all([str(tmp_path / "evil.tar")])
    assert sorted(contents) == [
        f"{tmp_path}/evil.tar!abs/rank1.log",
        f"{tmp_path}/evil.tar!etc/cron.d/rank3.log",
    ]
    assert len(warnings) == 2 and all("escapes the archive" in w for w in warnings)


def test_a_truncated_archive_yields_the_members_before_the_break(tmp_path: Path) -> None:
    with tarfile.open(tmp_path / "whole.tar", "w") as archive:
        archive.add(BAD_SAMPLE, arcname="bundle")
    whole = (tmp_path / "whole.tar").read_bytes()
    (tmp_path / "cut.tar").write_bytes(whole[: len(whole) * 3 // 4])
    complete, _ = _read_all([str(tmp_path / "whole.tar")])
    partial, warnings = _read_all([str(tmp_path / "cut.tar")])
    assert 0 < len(partial) < len(complete)
    assert any("damaged or truncated" in w for w in warnings)


def test_a_missing_path_is_an_input_error() -> None:
    with pytest.raises(InputError, match="no such file"):
        _read_all(["/nonexistent/denpex/logs"])
