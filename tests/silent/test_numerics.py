"""NaN onset, loss divergence and loss-scale collapse, named with their step and ranks.

Lines are rendered from the emitters' own format strings (Megatron-LM training_log(),
DeepSpeed's DynamicLossScaler, torchtitan's MetricsProcessor, Transformers' ProgressCallback)
with realistic values.
"""

from __future__ import annotations

import random

from denpex.silent.detect import find_silent_failures
from tests.silent.helpers import records


def megatron(iteration: int, loss: float | None, scale: float, skipped: int) -> str:
    line = f" [2025-03-14 09:{iteration // 60:02d}:{iteration % 60:02d}.503161]"
    line += f" iteration {iteration:8d}/{500000:8d} |"
    line += f" consumed samples: {iteration * 512:12d} |"
    line += f" elapsed time per iteration (ms): {1532.4:.1f} |"
    line += f" learning rate: {1.5e-4:.6E} |"
    line += f" global batch size: {512:5d} |"
    if loss is not None:
        line += " {}: {:.6E} |".format("lm loss", loss)
    line += f" loss scale: {scale:.1f} |"
    line += f" number of skipped iterations: {skipped:3d} |"
    line += f" number of nan iterations: {0:3d} |"
    return line


def test_megatron_loss_scale_halving_on_every_step_is_a_collapse_from_its_first_halving() -> None:
    lines, scale = [], 65536.0
    for it in range(1, 61):
        if it >= 41:
            scale = max(scale / 2, 1.0)
        lines.append(megatron(it, 3.2 - 0.01 * min(it, 40), scale, 1 if it >= 41 else 0))
    findings = find_silent_failures(records("\n".join(lines) + "\n"))
    assert [f.failure_class for f in findings] == ["loss_scale_underflow"]
    assert findings[0].step == 41
    assert findings[0].measurements["lowest_loss_scale"] == 1.0


def test_occasional_overflows_that_recover_are_normal_dynamic_scaling() -> None:
    lines, scale = [], 65536.0
    for it in range(1, 200):
        if it % 25 == 0:
            scale /= 2
        elif it % 25 == 10:
            scale *= 2
        lines.append(megatron(it, 3.0 - 0.002 * it, scale, 0))
    assert find_silent_failures(records("\n".join(lines) + "\n")) == []


def test_deepspeed_overflow_lines_alone_show_the_collapse_and_the_rank() -> None:
    lines = []
    scale = 65536
    for step in range(1, 30):
        # The scaler prints while the optimizer steps; the engine reports the step after it.
        if step >= 20:
            lines.append(
                f"[2024-05-02 11:04:{step:02d},981] [INFO] [loss_scaler.py:183:update_scale] "
                f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {scale}, "
                f"reducing to {scale // 2}"
            )
            scale //= 2
        lines.append(
            f"[2024-05-02 11:04:{step:02d},352] [INFO] [logging.py:96:log_dist] [Rank 0] "
            f"step={step}, skipped={max(0, step - 19)}, lr=[9.6e-05], mom=[(0.9, 0.999)]"
        )
    findings = find_silent_failures(records("\n".join(lines) + "\n"))
    assert [(f.failure_class, f.ranks) for f in findings] == [("loss_scale_underflow", [0])]
    assert findings[0].step == 20


def titan(rank: int, step: int, loss: float, grad_norm: float) -> str:
    return (
        f"[rank{rank}]:[titan] 2025-06-11 14:02:{step % 60:02d},871 - root - INFO - "
        f"step: {step:2}  loss: {loss:8.5f}  grad_norm: {grad_norm:7.4f}  "
        f"memory: {48.87:5.2f}GiB({51.44:.2f}%)  tps: {round(4376.2):,}  "
        f"tflops: {253.41:,.2f}  mfu: 25.62%"
    )


def test_the_first_nan_is_named_with_its_step_and_the_ranks_where_it_appeared() -> None:
    noise = random.Random(3)
    lines = []
    for step in range(1, 51):
        for rank in range(4):
            loss = 4.0 - 0.02 * step + noise.gauss(0, 0.05)
            if (step >= 37 and rank == 2) or step >= 38:
                loss = float("nan")
            lines.append(titan(rank, step, loss, 1.1 + noise.gauss(0, 0.1)))
    findings = find_silent_failures(records("\n".join(lines) + "\n"))
    nan = [f for f in findings if f.failure_class == "nan_or_inf"]
    assert len(nan) == 1 and nan[0].step == 37 and nan[0].ranks == [2]
    assert "nan" in nan[0].evidence[0].text


def hf(loss: float) -> str:
    logs = {"loss": loss, "grad_norm": 1.3, "learning_rate": 4.8e-05, "epoch": 0.5}
    return str({k: f"{v:.4g}" for k, v in logs.items()})


def test_a_loss_that_leaves_its_best_level_and_stays_above_it_diverges() -> None:
    noise = random.Random(5)
    losses = [2.5 * 0.98**i + noise.gauss(0, 0.02) for i in range(60)]
    losses += [losses[-1] * (1.4 + 0.1 * i) for i in range(20)]
    findings = find_silent_failures(records("\n".join(hf(x) for x in losses) + "\n"))
    assert [(f.failure_class, f.detector) for f in findings] == [
        ("loss_divergence", "numerics.loss_divergence")
    ]
    # The first risen point (61) is within the noise and the lag of a rolling median.
    assert findings[0].step is not None and 61 <= findings[0].step <= 64


def test_a_noisy_descending_loss_raises_nothing() -> None:
    noise = random.Random(11)
    losses = [2.5 * 0.99**i + abs(noise.gauss(0, 0.08)) for i in range(300)]
    assert find_silent_failures(records("\n".join(hf(x) for x in losses) + "\n")) == []


def test_a_loss_that_only_wanders_is_not_a_divergence_on_any_of_many_ranks() -> None:
    # 64 ranks whose loss wanders between 1.5 and 3.5 from the first step, without a trend:
    # with a baseline of a few points, some rank's first points were close together by chance
    # and every later point looked like a divergence against them.
    rng = random.Random(7)
    lines = [
        f"[rank{rank}]:" + megatron(it, rng.uniform(1.5, 3.5), 65536.0, 0)
        for rank in range(64)
        for it in range(1, 201)
    ]
    findings = find_silent_failures(records("\n".join(lines) + "\n"))
    assert not [f for f in findings if f.failure_class == "loss_divergence"]


# Real (zai-org/CogVideo#233): a healthy fp16 run's first steps under DeepSpeed, whose scaler
# starts at 2^32 and halves six times in a row while it settles.
COGVIDEO_CALIBRATION = "".join(
    "[2024-09-11 17:" + stamp + "] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
    f"Rank 0 Skipping step. Attempted loss scale: {2 * scale}, reducing to {scale}\n"
    for stamp, scale in (
        ("52:18,030", 2147483648),
        ("52:32,563", 1073741824),
        ("52:47,082", 536870912),
        ("53:15,865", 268435456),
        ("53:58,933", 134217728),
        ("58:33,295", 67108864),
    )
)


def test_six_halvings_that_leave_a_large_scale_are_the_scaler_settling() -> None:
    assert find_silent_failures(records(COGVIDEO_CALIBRATION)) == []
