"""Masking: the same event printed by different ranks, pids, ports and sizes reads the same."""

from __future__ import annotations

from denpex.retrieval.masking import mask

# Printed by ranks 0 and 2 of two different real torchrun jobs (tests/hybrid/corpus).
PEER_CLOSED_A = (
    "[default0]:[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
    "pair.cc:553] Connection closed by peer [127.0.0.1]:4520. This is typically caused by a "
    "remote worker crashing."
)
PEER_CLOSED_B = (
    "[rank2]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
    "pair.cc:553] Connection closed by peer [127.0.0.1]:36266. This is typically caused by a "
    "remote worker crashing."
)


def test_launcher_prefixes_ports_and_paths_do_not_split_one_event() -> None:
    assert mask(PEER_CLOSED_A) == mask(PEER_CLOSED_B)
    assert mask(PEER_CLOSED_A).startswith("RuntimeError: [<PATH>:<NUM>] Connection closed by peer")


def test_times_pids_and_exit_codes_are_masked_but_words_stay() -> None:
    a = "E1130 06:50:23.547000 16731 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 16759) of binary: /work/wt-hybrid/.venv/bin/python"  # noqa: E501
    b = "E1130 07:05:25.469000 24856 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) local_rank: 1 (pid: 25260) of binary: /work/wt-hybrid/.venv/bin/python"  # noqa: E501
    assert mask(a) == mask(b)
    assert "failed (exitcode: <NUM>) local_rank: <NUM> (pid: <NUM>) of binary: <PATH>" in mask(a)


def test_sizes_hex_addresses_and_known_hosts_are_masked() -> None:
    # Real lines from the reference catalog (docs/reference/cuda_errors.md, xid.md).
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.15 GiB of which 1.2 GiB is free."
    )
    assert mask(oom) == (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate <NUM> GiB. GPU <NUM> has "
        "a total capacity of <NUM> GiB of which <NUM> GiB is free."
    )
    xid = "gpu-042 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
    assert mask(xid, hosts=["gpu-042"]) == (
        "<HOST> kernel: NVRM: Xid (PCI:<PCI>): <NUM>, pid=<NUM>, GPU has fallen off the bus."
    )


def test_shapes_and_file_names_are_variable_parts() -> None:
    assert mask("RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x16 and 32x4)") == (
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (<DIMS> and <DIMS>)"
    )
    assert (
        mask(
            "FileNotFoundError: [Errno 2] No such file or directory: "
            "'/tmp/shards/train-00001-of-00064.bin'"
        )
        == "FileNotFoundError: [Errno <NUM>] No such file or directory: '<PATH>'"
    )


def test_identifiers_with_digits_inside_are_kept() -> None:
    line = "[rank1]: RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output."
    assert mask(line) == (
        "RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output."
    )
