"""Real lines hivemind printed in failed runs meet the signatures generated from its source
(catalogs/hivemind), its reviewed mapping decides messages as a reviewer would, and its
extractor reads the shapes the shared Python reader does not (the optimizers' status reports,
an exception handed to a future, an exception class's own text).

Every real line below is copied from the public thread named beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalogs.hivemind.extract import extract
from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_catalog_reads, assert_mapped, decide

FAMILY = "hivemind_cat"
RULES = Path(__file__).resolve().parents[2] / "rules"


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/gensyn-ai/rl-swarm/issues/246: p2pd exited before it was ready, its last
        # line naming the bootstrap peers it could not reach
        (
            "hivemind.p2p.p2p_daemon_bindings.utils.P2PDaemonError: Daemon failed to start:"
            " 2025/05/05 05:11:19 failed to connect to bootstrap peers",
            "rendezvous_failure",
        ),
        # github.com/gensyn-ai/rl-swarm/issues/114: p2pd not ready within startup_timeout
        (
            "hivemind.p2p.p2p_daemon_bindings.utils.P2PDaemonError: Daemon failed to start in"
            " 15.0 seconds",
            "rendezvous_failure",
        ),
        # github.com/gensyn-ai/rl-swarm/issues/577: no initial peer answered the DHT's ping
        (
            "RuntimeError('DHTNode bootstrap failed: none of the initial_peers responded to a"
            " ping. (set ensure_bootstrap_success=False to ignore)')",
            "rendezvous_failure",
        ),
        # github.com/learning-at-home/hivemind/issues/519: matchmaking found no group
        (
            "Nov 12 20:18:11.061 [ERROR] [hivemind.averaging.averager._step:478] Averaging step"
            " failed: could not find a group",
            "rendezvous_failure",
        ),
        # the same thread: hivemind.Optimizer's status report of the failed round (verbose=True)
        (
            "Nov 12 20:18:11.063 [INFO] Averaging failed with <class"
            " 'hivemind.averaging.partition.AllreduceException'>",
            "collective_timeout",
        ),
    ],
)
def test_a_real_hivemind_line_gets_its_class(
    matcher: Matcher, text: str, failure_class: str
) -> None:
    assert_catalog_reads(matcher, text, FAMILY, failure_class)


@pytest.mark.parametrize(
    ("text", "level", "file", "failure_class"),
    [
        # 1.1.12 hivemind/dht/protocol.py: a bootstrap peer could not connect back (NAT, firewall)
        (
            "Peer {peer} can't access this node. Probably, libp2p has failed to bypass the"
            " firewall",
            "ValidationError",
            "hivemind/dht/protocol.py",
            "network_config_error",
        ),
        # 1.1.12 hivemind/p2p/p2p_daemon_bindings/utils.py: the daemon's failed dial
        (
            "Connect failed. msg={response.error.msg}",
            "ControlFailure",
            "hivemind/p2p/p2p_daemon_bindings/utils.py",
            "network_config_error",
        ),
        # 1.1.12 hivemind/optim/optimizer.py: a gradient round that ran past averaging_timeout
        (
            "Averaging gradients failed with {repr(e)}",
            "STATUS",
            "hivemind/optim/optimizer.py",
            "collective_timeout",
        ),
        # 1.1.12 hivemind/p2p/p2p_daemon.py: two peers with one identity file
        (
            "Identity from `{identity_path}` is already taken by another peer",
            "P2PDaemonError",
            "hivemind/p2p/p2p_daemon.py",
            "launch_config_error",
        ),
        # 1.1.12 hivemind/utils/multiaddr/exceptions.py: a malformed initial_peers address
        (
            "Invalid MultiAddr {0!r}: {1}",
            "StringParseError",
            "hivemind/utils/multiaddr/exceptions.py",
            "framework_config_error",
        ),
        # 1.1.12 hivemind/averaging/allreduce.py: a config check that names a timeout, not a
        # collective that timed out
        (
            "If reducer_timeout is enabled, sender_timeout must be shorter than reducer_timeout.",
            "ValueError",
            "hivemind/averaging/allreduce.py",
            "framework_config_error",
        ),
    ],
)
def test_the_mapping_gives_a_mechanism_its_class(
    text: str, level: str, file: str, failure_class: str
) -> None:
    assert_mapped("hivemind", text, level, file, failure_class)


def test_progress_reports_of_the_optimizer_stay_context() -> None:
    for text in ("Transitioning to epoch {self.local_epoch}", "Proceeding with local gradients"):
        assert decide("hivemind", text, "STATUS", "hivemind/optim/optimizer.py").disposition == (
            "context"
        )


def test_the_extractor_reads_status_reports_futures_and_exception_classes(tmp_path: Path) -> None:
    package = tmp_path / "hivemind"
    package.mkdir()
    (package / "optimizer.py").write_text(
        "class Optimizer:\n"
        "    def step(self):\n"
        "        try:\n"
        "            pass\n"
        "        except BaseException as e:\n"
        "            logger.log(\n"
        '                self.status_loglevel, f"Averaging gradients failed with {repr(e)}"\n'
        "            )\n"
        '        logger.log(logging.INFO, "not a status report")\n'
    )
    (package / "daemon.py").write_text(
        "async def read(ready, last_line):\n"
        '    ready.set_exception(P2PDaemonError(f"Daemon failed to start: {last_line}"))\n'
        '    raise P2PDaemonError("raised, read once by the shared reader")\n'
    )
    (package / "exceptions.py").write_text(
        "class Error(Exception):\n"
        "    pass\n"
        "class StringParseError(ValueError, Error):\n"
        "    def __init__(self, message, string, protocol=None):\n"
        "        if protocol:\n"
        '            message = "Invalid MultiAddr {0!r} protocol {1}: {2}".format(\n'
        "                string, protocol, message\n"
        "            )\n"
        "        else:\n"
        '            message = "Invalid MultiAddr {0!r}: {1}".format(string, message)\n'
        "        super().__init__(message)\n"
    )
    found = {(m.level, m.text, m.style) for m in extract(tmp_path, "1.1.12")}
    assert found == {
        ("STATUS", "Averaging gradients failed with {repr(e)}", "fstring"),
        ("P2PDaemonError", "Daemon failed to start: {last_line}", "fstring"),
        ("P2PDaemonError", "raised, read once by the shared reader", "literal"),
        ("StringParseError", "Invalid MultiAddr {0!r} protocol {1}: {2}", "brace"),
        ("StringParseError", "Invalid MultiAddr {0!r}: {1}", "brace"),
    }


def test_the_catalog_reads_the_1_1_release_lines() -> None:
    accounting = json.loads((RULES / FAMILY / "CATALOG.json").read_text())
    assert [row["line"] for row in accounting["releases"]] == ["1.1.10", "1.1.11", "1.1.12"]
    assert all(row["found"] > 0 for row in accounting["releases"])
