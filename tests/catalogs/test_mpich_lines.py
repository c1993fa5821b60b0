"""Real lines MPICH printed meet the signatures generated from its source (catalogs/mpich), its
Hydra patterns read other releases' function and file:line prefixes, and the reviewed mapping
decides its messages as a reviewer would.

The real lines are copied from the public record named beside them; the Hydra lines of the
second test are in the shape Hydra prints (its prefix around a message of its source), not
copied from a thread; the mapping cases are format strings of the pinned releases' source.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, catalog_hits, decide

FAMILY = "mpich_cat"

# github.com/pmodels/mpich/commit/51ab64ee77d5e961e0037d791304145114974e46 quotes Red Hat
# bugzilla 1839007: MPICH 3.3's TCP netmod in a chroot whose hostname did not resolve.
GETHOSTBYNAME_STACK = (
    "Fatal error in PMPI_Init: Other MPI error, error stack:\n"
    "MPIR_Init_thread(586)..............:\n"
    "MPID_Init(224).....................: channel initialization failed\n"
    "MPIDI_CH3_Init(105)................:\n"
    "MPID_nem_init(324).................:\n"
    "MPID_nem_tcp_init(175).............:\n"
    "MPID_nem_tcp_get_business_card(404):\n"
    "MPID_nem_tcp_init(375).............: gethostbyname failed, 68da8e7c62a2404bb4bf75c9ce643e06"
    " (errno 0)\n"
)


def test_a_hostname_that_does_not_resolve_is_a_network_configuration_error(
    matcher: Matcher,
) -> None:
    line = GETHOSTBYNAME_STACK.splitlines()[-1]
    assert_catalog_reads(matcher, line, FAMILY, "network_config_error")
    assert any(m.captures.get("errno") == "0" for m in catalog_hits(matcher, line, FAMILY))
    # the stack as a whole: its framing line and the channel's line add no class of their own
    assert_catalog_reads(matcher, GETHOSTBYNAME_STACK, FAMILY, "network_config_error")
    framing = catalog_hits(matcher, GETHOSTBYNAME_STACK.splitlines()[0], FAMILY)
    assert {m.signature.failure_class for m in framing} == {"unknown"}
    assert all(m.signature.confidence <= 0.35 for m in framing)


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # too generic alone, matched after Hydra's prefix: 4.x's function and path, 3.x's, a
        # proxy's prefix, and a build that prints the file and line without the function
        (
            "[mpiexec@node01] HYDU_sock_write (lib/utils/sock.c:250): write error (Broken pipe)",
            "peer_process_died",
        ),
        (
            "[mpiexec@node01] HYDU_sock_write (utils/sock/sock.c:256): write error (Broken pipe)",
            "peer_process_died",
        ),
        (
            "[proxy:0:1@node02] HYDU_sock_write (utils/sock/sock.c:256): write error (Broken pipe)",
            "peer_process_died",
        ),
        (
            "[mpiexec@node01] utils/sock/sock.c (256): write error (Broken pipe)",
            "peer_process_died",
        ),
        # specific alone: read without the prefix
        (
            "[proxy:0:0@node02] HYD_pmcd_pmip_control_cmd_cb (pm/pmiserv/pmip_cb.c:887): assert"
            " (!closed) failed",
            "peer_process_died",
        ),
        ("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", "peer_process_died"),
        (
            "[proxy:0:1@node02] HYDU_create_process (utils/launch/launch.c:74): execvp error on"
            " file train.py (No such file or directory)",
            "launch_config_error",
        ),
    ],
)
def test_hydra_lines_of_any_release_meet_their_signatures(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


def test_a_generic_hydra_message_without_hydra_s_prefix_is_not_read(matcher: Matcher) -> None:
    assert not catalog_hits(matcher, "write error (Broken pipe)", FAMILY)


def test_mpiexec_s_exit_string_names_the_signal(matcher: Matcher) -> None:
    text = "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault (signal 11)"
    (hit,) = catalog_hits(matcher, text, FAMILY)
    assert hit.signature.failure_class == "peer_process_died"
    assert hit.captures["signal"] == "Segmentation fault"
    assert hit.captures["signal_number"] == "11"


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 4.3.2 src/pm/hydra/lib/utils/args.c: an option Hydra does not know
        (
            "unrecognized argument %s",
            "ERROR",
            "src/pm/hydra/lib/utils/args.c",
            "launch_config_error",
        ),
        # 4.3.2 src/pm/hydra/proxy/pmip.c: the proxy cannot reach mpiexec
        (
            "unable to connect to server %s at port %d (check for firewalls!)",
            "PROXY",
            "src/pm/hydra/proxy/pmip.c",
            "network_config_error",
        ),
        # 4.3.2 src/pm/hydra/mpiexec/pmiserv_pmci.c: mpiexec's -timeout expired
        (
            "APPLICATION TIMED OUT, TIMEOUT = %ds",
            "DUMP",
            "src/pm/hydra/mpiexec/pmiserv_pmci.c",
            "time_limit",
        ),
        # 4.3.2 src/pmi/src/pmi_util.c: a process not started by an MPICH-PMI launcher
        (
            "write_line error; fd=%d buf=:%s:",
            "PMI",
            "src/pmi/src/pmi_util.c",
            "launch_config_error",
        ),
        # 4.3.2 src/mpi/errhan/errnames.txt: **truncate, **nomem, **gethostbyname
        (
            "Message truncated; %d bytes received but buffer size is %d",
            "STACK",
            "src/mpi/errhan/errnames.txt",
            "collective_mismatch",
        ),
        (
            "Out of memory (unable to allocate a '%s' of size %d)",
            "STACK",
            "src/mpi/errhan/errnames.txt",
            "host_oom",
        ),
        # 4.3.2 maint/extracterrmsgs: the text of every MPIDI_OFI_CALL that fails
        (
            "OFI call %s failed (default nic=%s: %s)",
            "STACK",
            "maint/extracterrmsgs",
            "network_fabric_error",
        ),
        # 4.3.2 src/mpi/init/init_impl.c
        (
            "application called MPI_Abort(%s, %d) - process %d",
            "ABORT",
            "src/mpi/init/init_impl.c",
            "python_exception",
        ),
    ],
)
def test_the_mapping_files_mpich_s_messages(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("mpich", text, level, file, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file"),
    [
        # the top of an error stack (3.4 errnames.txt **mpi_allreduce): the call, not the cause
        (
            "MPI_Allreduce(sbuf=%s, rbuf=%s, count=%d, datatype=%s, op=%s, comm=%s) failed",
            "STACK",
            "src/mpi/errhan/errnames.txt",
        ),
        # the BAD TERMINATION box's detail lines and -verbose output
        ("=   EXIT CODE: %d", "BANNER", "src/pm/hydra/mpiexec/pmiserv_cb.c"),
        ("Launch arguments: ", "DUMP", "src/pm/hydra/lib/tools/bootstrap/external/slurm_launch.c"),
    ],
)
def test_informational_lines_are_context(text: str, level: str, file: str) -> None:
    assert decide("mpich", text, level, file).disposition == "context"
