"""Lines without a stamp of their own inherit one from a line above; when a stamped line below
them says otherwise, the file's order wins over the inherited time, and own stamps never move.

The fixture is a real Slurm + torchrun log from a public thread (mir-group/nequip#210): the
launcher's header is stamped 03:48:21, the tracebacks under it are not, and slurmstepd, on
another clock, stamps the step's cancellation 00:33:51 after them.
"""

from __future__ import annotations

from pathlib import Path

from denpex.pipeline import scan_inputs
from denpex.timeline.order import build_timeline
from tests.conftest import bundled_matcher, diagnose_paths, write_job

FIXTURE = Path(__file__).parent / "fixtures" / "inherited_time" / "job.log"


def test_an_inherited_time_later_than_a_stamp_below_it_yields_to_the_files_order() -> None:
    diagnosis = diagnose_paths([str(FIXTURE)])
    cause = diagnosis.root_causes[0]
    assert cause.failure_class == "rendezvous_failure", diagnosis.summary
    assert cause.signature_id == "rendezvous.store_port_in_use"
    matches = build_timeline(scan_inputs([str(FIXTURE)], bundled_matcher()).matches).matches
    bind = next(m for m in matches if m.signature.id == "rendezvous.store_port_in_use")
    cancel = next(m for m in matches if "CANCELLED AT" in m.event.text)
    assert bind.event.time_inferred and bind.event.time <= cancel.event.time  # type: ignore[operator]
    assert any("placed before it, in the file's order" in w for w in diagnosis.warnings)


def test_own_stamps_keep_their_times_in_a_file_of_several_ranks(tmp_path: Path) -> None:
    # Two ranks' logs pasted one after the other (lines rendered in torch 2.x's c10d formats):
    # rank 1's stamp is earlier than rank 0's.
    job = write_job(
        tmp_path,
        {
            "all.log": (
                "[rank0]:[E1201 03:12:40.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog "
                "caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, "
                "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before "
                "timing out.\n"
                "[rank1]:[E1201 03:02:07.000000000 ProcessGroupNCCL.cpp:1605] [PG 0 Rank 1] "
                "Process group watchdog thread terminated with exception: CUDA error: an illegal "
                "memory access was encountered\n"
            )
        },
    )
    matches = build_timeline(scan_inputs([str(job)], bundled_matcher()).matches).matches
    stamped = [m for m in matches if m.event.time is not None and not m.event.time_inferred]
    assert [m.event.rank for m in stamped][:2] == [1, 0]
