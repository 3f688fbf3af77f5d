"""O018 deepspeed-batch-mismatch."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import (
    SHELL, _checked, _flag_of, _invocations, _k, _literal_at, _num, _on, _remote_reward, _where, _world,
)


@rule("O018", "deepspeed-batch-mismatch", Severity.ERROR, kinds=SHELL, fixable=True)
def deepspeed_batch_mismatch(ctx):
    """The train batch is not a multiple of micro batch × GPUs of a DeepSpeed group: DeepSpeed asserts.

    ## What it does
    OpenRLHF hands DeepSpeed `train_batch_size = train.batch_size × ring_attn_size × tensor_parallel_size` and
    `train_micro_batch_size_per_gpu = train.micro_batch_size`; DeepSpeed derives the accumulation steps from the
    group's world size and asserts `train_batch == micro × accumulation × world`. The check is made for the actor
    and critic groups of train_ppo_ray (and, from v0.10.2, the reference and reward groups, which get the same
    keys), and for the launcher's world size of SFT/DPO/RM. Skipped with dynamic batching.

    ## Why it matters
    "train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size 256 != 2 * 18 * 7"
    (issue #346) comes after every model was loaded.

    ## Example
    `--train.batch_size 128 --train.micro_batch_size 4` with 6 actor GPUs.

    ## Fix
    An unsafe fix rounds the train batch to the nearest multiple of micro batch × world size.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/issues/346
    - https://github.com/OpenRLHF/OpenRLHF/issues/397
    - https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/config.py
    """
    from rlhf_lint.frameworks.openrlhf import _generic_settings, critic_in_use

    k = _k()
    for inv in _invocations(ctx):
        if inv.cli in (None, "serve_rm", "lora_combiner", "batch_inference", "interactive_chat"):
            continue
        if k.check_applies("deepspeed_batch_divisible", inv.tag) is None or _on(inv, "train.dynamic_batch_enable"):
            continue
        b, m = _num(inv, "train.batch_size"), _num(inv, "train.micro_batch_size")
        ring, tp = _num(inv, "ds.ring_attn_size") or 1, _num(inv, "ds.tensor_parallel_size") or 1
        if b is None or m is None or m <= 0:
            continue
        groups = []
        if inv.cli in ("train_ppo_ray",):
            groups.append(("actor", _world(inv, "actor")))
            if critic_in_use(inv) and (inv.get("critic.model_name_or_path") or inv.get("reward.model_name_or_path")):
                groups.append(("critic", _world(inv, "critic")))
            if inv.tag >= k.index("v0.10.2"):
                kl = _num(inv, "algo.kl.init_coef")
                if kl is not None and kl > 0 and not _on(inv, "train.colocate_actor_ref"):
                    groups.append(("ref", _world(inv, "ref")))
                if inv.get("reward.model_name_or_path") and not _remote_reward(inv) \
                        and not _on(inv, "train.colocate_critic_reward"):
                    groups.append(("reward", _world(inv, "reward")))
        elif inv.cli == "train_ppo":
            continue
        else:
            world = _generic_settings(inv.command, ctx.source, ctx.project).value("topology.world_size")
            groups.append(("training", world if isinstance(world, int) and not isinstance(world, bool) else None))
        total = int(b) * int(ring) * int(tp)
        # the fix must satisfy every group at once, or fixing one group's batch breaks another's (no convergence)
        import math

        common = math.lcm(*(int(m) * w for _, w in groups if w is not None and w > 0)) if groups else 1
        for role, world in groups:
            if world is None or world <= 0:
                continue
            step = int(m) * world
            if total % step == 0 and total >= step:
                continue
            span, related = _where(inv, "train.batch_size", "train.micro_batch_size")
            scale = f" × ring {ring} × TP {tp}" if ring * tp > 1 else ""
            nearest = max(common, round(total / common) * common) // (int(ring) * int(tp))
            fix = None
            word = inv.values["train.batch_size"].word
            if word is not None and _literal_at(ctx.source, word.span, str(word.text)) and \
                    (nearest * int(ring) * int(tp)) % common == 0:
                fix = Fix(f"set {_flag_of(inv, 'train.batch_size')} to {nearest}", (Edit.replace(word.span, str(nearest)),),
                          Applicability.UNSAFE)
            shown = f"{b}{scale} = {total}" if scale else f"{b}"
            yield _checked(
                inv, span,
                f"DeepSpeed needs the train batch ({shown}) to be a multiple of micro "
                f"batch {m} × {world} GPUs of the {role} group = {step}",
                fix=fix,
                related=related)
            break
