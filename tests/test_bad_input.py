"""Bad input gets a clear word and loses nothing; it never crashes the process."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import threading
import time
from pathlib import Path

import pytest

from denpex.errors import InputError, InputTooLarge, InputTooSlow
from denpex.ingest.sources import MAX_DIRECTORY_DEPTH, InputLimits
from denpex.models import Status
from tests.conftest import BAD_SAMPLE, diagnose_paths

RANK3 = next(BAD_SAMPLE.glob("logs/*/attempt_0/3/stderr.log")).read_bytes()


def test_a_ten_megabyte_line_does_not_hide_the_error_after_it(tmp_path: Path) -> None:
    progress_bar = b"\r".join(
        b"Epoch 0:  %3d%%|####      | %d/1000" % (i % 100, i) for i in range(300_000)
    )
    (tmp_path / "rank3.log").write_bytes(progress_bar[: 10 * 1024 * 1024] + b"\n" + RANK3)
    top = diagnose_paths([str(tmp_path)]).root_causes[0]
    assert "IndexError" in top.evidence[0].text
    assert top.evidence[0].rank == 3  # read, and attributed to the rank whose file it is


def test_a_line_longer_than_the_read_limit_is_cut_and_said(tmp_path: Path) -> None:
    (tmp_path / "rank3.log").write_bytes(b"x" * (17 * 1024 * 1024) + b"\n" + RANK3)
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.root_causes[0].evidence[0].rank == 3
    assert any("read in pieces" in w for w in diagnosis.warnings)


def test_invalid_utf8_around_the_error_is_replaced_not_fatal(tmp_path: Path) -> None:
    mangled = b"\xff\xfe\xc3\x28 garbage \xa0\xa1\n" + RANK3.replace(
        b"index out", b"index \xe2\x28out"
    )
    (tmp_path / "rank3.log").write_bytes(mangled)
    top = diagnose_paths([str(tmp_path)]).root_causes[0]
    assert top.evidence[0].text.startswith("[rank3]: IndexError: index \ufffd(out of range")


def test_binary_garbage_beside_real_logs_is_skipped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "rank3.log").write_bytes(RANK3)
    (tmp_path / "core.12345").write_bytes(bytes(range(256)) * 1000)
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.root_causes[0].evidence[0].rank == 3
    assert any("core.12345" in w and "binary" in w for w in diagnosis.warnings)


def test_inputs_that_are_all_binary_garbage_are_nothing_to_diagnose(tmp_path: Path) -> None:
    # "No failure" would claim a log was read; nothing was.
    (tmp_path / "core.12345").write_bytes(bytes(range(256)) * 1000)
    with pytest.raises(InputError, match=r"nothing to diagnose: .*core\.12345.*binary"):
        diagnose_paths([str(tmp_path)])


@pytest.mark.parametrize("cut", [3, 10, 30], ids=["in-the-header", "after-it", "in-the-data"])
def test_a_gzip_cut_short_alone_is_nothing_to_diagnose(tmp_path: Path, cut: int) -> None:
    (tmp_path / "rank0.log.gz").write_bytes(gzip.compress(RANK3)[:cut])
    with pytest.raises(InputError, match=r"nothing to diagnose: .*rank0\.log\.gz"):
        diagnose_paths([str(tmp_path)])


def test_a_corrupt_gzip_is_reported_and_the_other_inputs_still_count(tmp_path: Path) -> None:
    (tmp_path / "rank3.log").write_bytes(RANK3)
    whole = gzip.compress(RANK3 * 50)
    (tmp_path / "rank0.log.gz").write_bytes(whole[: len(whole) // 2])
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.status is not Status.no_failure
    assert any("rank0.log.gz" in w for w in diagnosis.warnings)


def test_an_empty_file_is_an_input_with_no_lines(tmp_path: Path) -> None:
    (tmp_path / "rank1.log").write_bytes(b"")
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.status is Status.no_failure
    assert diagnosis.inputs[0].lines == 0


def test_a_pipe_inside_a_folder_is_skipped_not_waited_on(tmp_path: Path) -> None:
    (tmp_path / "rank3.log").write_bytes(RANK3)
    os.mkfifo(tmp_path / "rank0.log")  # nobody will ever write to it
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.root_causes[0].evidence[0].rank == 3
    assert any("rank0.log" in w and "not a regular file" in w for w in diagnosis.warnings)


def test_a_pipe_named_on_the_command_line_is_read(tmp_path: Path) -> None:
    pipe = tmp_path / "rank3.log"
    os.mkfifo(pipe)
    writer = threading.Thread(target=pipe.write_bytes, args=(RANK3,))
    writer.start()
    diagnosis = diagnose_paths([str(pipe)])
    writer.join()
    assert "IndexError" in diagnosis.root_causes[0].evidence[0].text


def test_numbers_too_long_to_be_ranks_or_pids_are_not_read_as_ones(tmp_path: Path) -> None:
    huge = b"9" * 5000
    lines = [
        b"[rank" + huge + b"]: RuntimeError: boom",
        b"[default" + huge + b"]: RuntimeError: boom",
        b"gpu-001:" + huge + b":77 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Init COMPLETE",
        b"  Process " + huge + b" terminated with exit code 1",
    ]
    (tmp_path / "launcher.log").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "rank3.log").write_bytes(RANK3)
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.root_causes[0].evidence[0].rank == 3


def test_a_folder_that_links_to_itself_ends_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "self").symlink_to(tmp_path)
    with pytest.raises(InputError, match="a link to a folder"):
        diagnose_paths([str(tmp_path)])


def test_folders_deeper_than_the_limit_are_not_entered_and_that_is_said(tmp_path: Path) -> None:
    (tmp_path / "rank3.log").write_bytes(RANK3)
    deep = tmp_path.joinpath(*["d"] * (MAX_DIRECTORY_DEPTH + 5))
    deep.mkdir(parents=True)
    (deep / "rank0.log").write_bytes(RANK3)
    diagnosis = diagnose_paths([str(tmp_path)])
    assert diagnosis.root_causes[0].evidence[0].rank == 3
    assert any(f"deeper than {MAX_DIRECTORY_DEPTH}" in w for w in diagnosis.warnings)


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


SMALL_CAP = InputLimits(max_unpacked_bytes=8 * 1024 * 1024)


def test_a_gzip_bomb_stops_at_the_unpacked_cap_with_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "rank0.log.gz").write_bytes(gzip.compress(b"step 1 ok\n" * (8 * 1024 * 1024)))
    with pytest.raises(InputTooLarge, match="unpack to more than 8388608 bytes"):
        diagnose_paths([str(tmp_path)], limits=SMALL_CAP)


def test_an_archive_nested_in_an_archive_counts_against_the_same_cap(tmp_path: Path) -> None:
    inner = _tar_gz({"rank1.log": b"step 1 ok\n" * (2 * 1024 * 1024)})
    (tmp_path / "job.tar.gz").write_bytes(_tar_gz({"inner.tar.gz": inner}))
    with pytest.raises(InputTooLarge):
        diagnose_paths([str(tmp_path / "job.tar.gz")], limits=SMALL_CAP)


def test_archives_under_the_cap_are_read_whole(tmp_path: Path) -> None:
    (tmp_path / "job.tar.gz").write_bytes(_tar_gz({"rank3.log": RANK3}))
    diagnosis = diagnose_paths([str(tmp_path / "job.tar.gz")], limits=SMALL_CAP)
    assert diagnosis.root_causes[0].evidence[0].rank == 3


def test_reading_past_the_deadline_stops_with_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "rank3.log").write_bytes(RANK3)
    with pytest.raises(InputTooSlow, match="time limit"):
        diagnose_paths([str(tmp_path)], limits=InputLimits(deadline=time.monotonic() - 1))


def test_each_reading_bound_is_a_limit_the_caller_sets_and_says_when_it_bites(
    tmp_path: Path,
) -> None:
    (tmp_path / "job.tar.gz").write_bytes(
        _tar_gz({"rank3.log": RANK3, "rank1.log": b"step 1 ok\n", "rank2.log": b"step 1 ok\n"})
    )
    (tmp_path / "nested.tar.gz").write_bytes(_tar_gz({"inner.tar.gz": _tar_gz({"r.log": b"x"})}))
    tmp_path.joinpath("a", "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "rank0.log").write_bytes(RANK3)
    limits = InputLimits(max_members=1, max_nesting=0, max_directory_depth=1)
    diagnosis = diagnose_paths([str(tmp_path)], limits=limits)
    said = "\n".join(diagnosis.warnings)
    assert "stopped after 1 members (the max_members limit)" in said
    assert "nested deeper than 0 (the max_nesting limit)" in said
    assert "deeper than 1 levels (the max_directory_depth limit)" in said
    assert diagnosis.root_causes[0].evidence[0].rank == 3


def test_a_zip_with_more_members_than_the_limit_says_how_many_it_read(tmp_path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(tmp_path / "job.zip", "w") as archive:
        archive.writestr("rank3.log", RANK3)
        for rank in range(4, 8):
            archive.writestr(f"rank{rank}.log", b"step 1 ok\n")
    diagnosis = diagnose_paths([str(tmp_path / "job.zip")], limits=InputLimits(max_members=2))
    assert any("read the first 2 of its 5 members" in w for w in diagnosis.warnings)


def test_a_flight_recorder_dump_over_the_container_limit_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    (tmp_path / "rank3.log").write_bytes(RANK3)
    entries = ",".join(["{}"] * 5000)
    (tmp_path / "fr_dump_0").write_text(f'{{"version": "2.0", "entries": [{entries}]}}')
    diagnosis = diagnose_paths([str(tmp_path)], limits=InputLimits(max_dump_containers=1000))
    refused = [w for w in diagnosis.warnings if "max_dump_containers" in w]
    assert len(refused) == 1 and "fr_dump_0: JSON that could hold 5002" in refused[0]
    assert diagnosis.root_causes[0].evidence[0].rank == 3
