"""Fault injection: real multi-process PyTorch (Gloo) jobs, one injected fault each.

`python -m evals.inject --out evals/corpus` runs every scenario in `scenarios.py` and writes one
case directory per scenario: the launcher's output, each rank's logs, Flight Recorder dumps and
kernel lines where the scenario produces them, and `expected.json` with the ground truth.
"""
