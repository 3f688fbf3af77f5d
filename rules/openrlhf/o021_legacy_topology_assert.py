"""O021 legacy-topology-assert."""
from __future__ import annotations

from rlhf_lint.model import UNKNOWN, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import PPO, SHELL, _checked, _invocations, _k, _num, _where, _world


@rule("O021", "legacy-topology-assert", Severity.ERROR, kinds=SHELL)
def legacy_topology_assert(ctx):
    """Topology assertions of older train_ppo_ray releases (power-of-two actors, divisibility by vLLM engines).

    ## What it does
    Applies the start-up assertions older releases made, only to scripts targeting them: actor/critic world size a
    power of two (up to v0.5.5); actor world divisible by the critic's (up to v0.7.0.post1); ZeRO-3 only with vLLM
    (v0.1.0..v0.7.0.post1); actor world >= vLLM engines (v0.4.6..v0.5.0); rollout batch divisible by the actor
    world, and actor world and engine count dividing one another (v0.5.5.post1..v0.7.0.post1).

    ## Why it matters
    These assertions confused users (issues #441, #760); later releases dropped them, so a script can be valid on
    one release and fail on the one pinned.

    ## Example
    6 actor GPUs with OpenRLHF v0.5.0.

    ## Fix
    Change the topology, or upgrade to a release without the restriction.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/issues/441
    - https://github.com/OpenRLHF/OpenRLHF/issues/760
    """
    from rlhf_lint.frameworks.openrlhf import critic_in_use

    k = _k()
    for inv in _invocations(ctx, PPO):
        actor, critic = _world(inv, "actor"), _world(inv, "critic")
        engines = _num(inv, "vllm.num_engines")
        if actor is None:
            continue
        checks = []
        if k.check_applies("actor_world_power_of_two", inv.tag):
            if actor & (actor - 1):
                checks.append((("actor.num_gpus_per_node", "actor.num_nodes"), f"the actor world size {actor} must be a power of 2"))
            if critic_in_use(inv) and critic is not None and critic & (critic - 1):
                checks.append((("critic.num_gpus_per_node", "critic.num_nodes"), f"the critic world size {critic} must be a power of 2"))
        if k.check_applies("actor_world_divisible_by_critic", inv.tag) and critic_in_use(inv) and critic and actor % critic:
            checks.append((("actor.num_gpus_per_node", "critic.num_gpus_per_node"),
                           f"the actor world size {actor} must be divisible by the critic's {critic}"))
        zero = _num(inv, "ds.zero_stage")
        if k.check_applies("zero3_needs_vllm", inv.tag) and zero == 3 and inv.get("vllm.num_engines") is not UNKNOWN \
                and not (engines and engines > 0):
            checks.append((("ds.zero_stage", "vllm.num_engines"), "ZeRO-3 is only supported with vLLM engines"))
        if engines and engines > 0:
            if k.check_applies("actor_world_at_least_engines", inv.tag) and actor < engines:
                checks.append((("vllm.num_engines",), f"the actor world size {actor} must be at least the {engines} vLLM engines"))
            if k.check_applies("actor_world_divisible_by_engines", inv.tag) and actor % engines and engines % actor:
                checks.append((("vllm.num_engines",), f"the actor world size {actor} and the {engines} vLLM engines must divide one another"))
        rb = _num(inv, "rollout.batch_size")
        if k.check_applies("rollout_batch_divisible_by_actor_world", inv.tag) and rb is not None and rb % actor:
            checks.append((("rollout.batch_size",), f"the rollout batch {rb} must be divisible by the actor world size {actor}"))
        for names, message in checks:
            span, related = _where(inv, *names)
            yield _checked(
                inv, span,
                f"{message}; OpenRLHF asserts this at start-up",
                related=related)
