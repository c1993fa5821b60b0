"""A context signature that claims its line (a message known to be harmless) keeps signatures
of lower priority from reading that line as a failure, and only that line."""

from __future__ import annotations

from pathlib import Path

from denpex.models import Status
from tests.conftest import diagnose_paths, write_job

# Real NCCL 2.20.5 INFO output at start-up (public issue pytorch/pytorch#135355): the probe for
# an optional net plugin quotes the loader's "cannot open shared object file".
NCCL_START = """\
fedora:2414:2414 [0] NCCL INFO Bootstrap : Using enp4s0:172.18.12.59<0>
fedora:2414:2414 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory No plugin found (libnccl-net.so), using internal implementation
fedora:2414:2414 [0] NCCL INFO cudaDriverVersion 12040
NCCL version 2.20.5+cuda12.4
"""  # noqa: E501
# The loader's wording as Python raises it for a library that is missing (not in a probe).
MISSING_NCCL = (
    "ImportError: libnccl.so.2: cannot open shared object file: No such file or directory\n"
)


def test_a_plugin_probe_at_start_up_is_not_a_missing_dependency(tmp_path: Path) -> None:
    job = write_job(tmp_path, {"rank0.log": NCCL_START})
    diagnosis = diagnose_paths([str(job / "rank0.log")])
    assert diagnosis.status is Status.no_failure


def test_the_same_loader_wording_outside_the_probe_is_still_a_missing_library(
    tmp_path: Path,
) -> None:
    job = write_job(tmp_path, {"rank0.log": NCCL_START + MISSING_NCCL})
    top = diagnose_paths([str(job / "rank0.log")]).root_causes[0]
    assert top.failure_class == "dependency_error"
    assert "libnccl.so.2" in top.evidence[0].text
