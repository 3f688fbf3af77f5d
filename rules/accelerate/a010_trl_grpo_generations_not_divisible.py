"""A010 trl-grpo-generations-not-divisible."""
from __future__ import annotations

from rlhf_lint.model import Finding, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.accelerate._common import HF_FRAMEWORKS, here, launch_setting, package_version, world_size


def _checks() -> dict:
    from rlhf_lint.schemas import load

    return load("hf/trl_checks.json")["grpo_generations"]


def _row(version):
    """The release's row; the newest one when the version is unknown; None before the check existed."""
    from rlhf_lint.frameworks.deepspeed import row_at

    rows = _checks()["rows"]
    return rows[-1] if version is None else row_at(rows, version)


@rule("A010", "trl-grpo-generations-not-divisible", Severity.ERROR, kinds=(), scope="job", frameworks=HF_FRAMEWORKS)
def trl_grpo_generations_not_divisible(ctx):
    """TRL's GRPO batch is not a multiple of num_generations: GRPOConfig / GRPOTrainer raise at start-up.

    ## What it does
    Redoes TRL's check for a GRPO launch (`trl grpo`, `-m trl.scripts.grpo`, a `grpo` script with a recipe) with the
    launch's world size: from TRL 0.18 the generation batch (`generation_batch_size`, else per-device batch x
    processes x `steps_per_generation`, which defaults to `gradient_accumulation_steps`) must be a multiple of
    `num_generations` (default 8), and `num_generations` at least 2; TRL 0.17 checks per-device batch x processes x
    accumulation, 0.15 and 0.16 per-device batch x processes; 0.14 has no check. Unset values take TRL's and
    TrainingArguments' defaults (per-device batch 8, accumulation 1, num_generations 8). The release is the one
    configured or pinned; when none is, the newest rule is applied and the finding is a warning that says so, as it
    is when the world size comes from the configuration rather than the launch, or from a plain `python` launch,
    taken as one process.

    ## Why it matters
    `ValueError: The effective train batch size (1 x 4 x 1) must be evenly divisible by the number of generations
    per prompt (8)` comes after the job got its GPUs, every time.

    ## Example
    `accelerate launch --num_processes 3 grpo.py --per_device_train_batch_size 4 --num_generations 8`: 12 is not a
    multiple of 8.

    ## Fix
    Choose `num_generations` among the divisors the message lists, or change the per-device batch, accumulation
    steps or GPU count.

    ## References
    https://github.com/huggingface/trl/blob/v0.15.0/trl/trainer/grpo_trainer.py#L343-L345
    https://github.com/huggingface/trl/blob/v0.17.0/trl/trainer/grpo_trainer.py
    https://github.com/huggingface/trl/blob/v0.23.0/trl/trainer/grpo_config.py
    """
    job = ctx.job
    if job.framework != "trl" or job.value("job.type") != "grpo":
        return  # a script only named like GRPO, without TRL's flags or recipe, may be any GRPO
    world, world_setting, assumed = world_size(ctx)
    one_process = world is None and job.value("job.launcher") == "python"
    if one_process:  # `python train.py`: one process, unless the script starts others itself
        world, assumed = 1, True
    if world is None:
        return
    version, version_note = package_version(ctx, "trl")
    row = _row(version)
    if row is None:
        return  # TRL < 0.15 does not check
    defaults = _checks()["defaults"]

    def number(key, default):
        s = launch_setting(ctx, key)
        if s is None:
            return default, None
        return (s.value if type(s.value) is int else None), s

    per, per_s = number("batch.micro_train", defaults["per_device_train_batch_size"])
    accum, accum_s = number("batch.grad_accum", defaults["gradient_accumulation_steps"])
    gens, gens_s = number("trl.num_generations", defaults["num_generations"])
    gen_batch, gen_batch_s = number("trl.generation_batch_size", None)
    steps, steps_s = number("trl.steps_per_generation", None)
    if None in (per, accum, gens) or (gen_batch_s is not None and gen_batch is None) \
            or (steps_s is not None and steps is None) or per <= 0:
        return  # a value the linter cannot read
    if row["batch"] == "per_device_world":
        total, formula = per * world, f"{per} per device x {world} processes"
    elif row["batch"] == "per_device_world_accum":
        total, formula = per * world * accum, f"{per} per device x {world} processes x {accum} accumulation steps"
    elif gen_batch is not None:
        total, formula = gen_batch, "generation_batch_size"
    else:
        spg = steps if steps is not None else accum
        total = per * world * spg
        formula = f"{per} per device x {world} processes x {spg} steps per generation"
    if gens >= 2 and total % gens == 0:
        return
    severity = None
    notes = []
    if version is None:
        severity = Severity.WARNING
        notes.append(f"{version_note}: the check of TRL >= 0.18 is applied (0.14 has none)")
    else:
        notes.append(version_note)
    if one_process:
        severity = Severity.WARNING
        notes.append("a plain `python` launch: one process assumed")
    elif assumed:
        severity = Severity.WARNING
        notes.append(f"world size {world} from the configuration, not the launch")
    if gens < 2:
        message = f"num_generations is {gens}: GRPO needs at least 2 completions per prompt (ValueError at start-up)"
    else:
        valid = [n for n in range(2, total + 1) if total % n == 0]
        message = (f"GRPO batch {total} ({formula}) is not a multiple of num_generations {gens}"
                   f"{'' if gens_s is not None else ' (TRL default)'}: TRL raises ValueError at start-up; valid "
                   f"values: {valid[:12]}")
    message += f" ({'; '.join(notes)})"
    related = []
    for s, what in ((per_s, "per-device batch"), (accum_s, "accumulation steps"), (world_setting, "world size"),
                    (gen_batch_s, "generation_batch_size"), (steps_s, "steps_per_generation")):
        if s is not None and s.span is not None and s.path is not None:
            related.append(Related(s.path, s.span, f"{what} {s.value}"))
    anchor = gens_s if gens_s is not None else gen_batch_s or per_s
    span, path = here(ctx, anchor)
    yield Finding(span, message, related=tuple(related), severity=severity, path=path)
