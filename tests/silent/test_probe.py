"""`denpex.probe` logs per-layer deltas and checksums; the diagnosis names the first layer."""

from __future__ import annotations

import subprocess
import sys

import pytest

from denpex.silent.probe_trace import first_anomaly
from tests.conftest import REPO
from tests.silent.helpers import records

torch = pytest.importorskip("torch")


def test_the_first_layer_whose_update_became_non_finite_is_named() -> None:
    from denpex.probe import Probe

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    lines: list[str] = []
    probe = Probe(model, every=2, rank=0, write=lines.append)
    with torch.no_grad():
        for step in range(12):
            for parameter in model.parameters():
                parameter.add_(0.01 * torch.randn_like(parameter))
            if step == 8:
                model[2].bias[0] = float("inf")
            probe.after_step(step)
    assert len(lines) == 6 * 4  # every other step, four tensors
    anomaly = first_anomaly(records("\n".join(lines) + "\n"))
    assert anomaly is not None
    assert (anomaly.step, anomaly.layer, anomaly.non_finite) == (8, "2.bias", True)


def test_the_diagnosis_path_never_imports_torch_for_the_probe_format() -> None:
    code = "import sys, denpex.pipeline, denpex.silent.detect\nprint('torch' in sys.modules)\n"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert done.stdout.strip() == "False"
