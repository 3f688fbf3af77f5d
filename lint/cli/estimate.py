"""``rlhf-lint estimate``: the memory estimate of a launch script, or of a job described by options."""
from __future__ import annotations

import json
import os
import sys

import click

BAR_WIDTH = 40


def _gib(n) -> str:
    return "-" if n is None else f"{n / 2**30:.1f} GiB"


def _read_local_config(reference: str) -> str | None:
    """A local model directory's config.json, read as JSON text only (never executed), at most 1 MiB."""
    path = os.path.join(os.path.expanduser(reference), "config.json")
    try:
        if os.path.isfile(path) and os.path.getsize(path) <= 2**20:
            with open(path, encoding="utf-8") as fh:
                return fh.read()
    except OSError:
        return None
    return None


def _job_from_options(model, gpus, gpus_per_node, zero, offload_optimizer, offload_param, dtype, grad_accum_dtype,
                      micro_batch, seq_len, gradient_checkpointing, flash_attn, job_type):
    from rlhf_lint.frameworks.jobs import Job
    from rlhf_lint.model import Setting, Settings

    settings = Settings()

    def put(key, value):
        if value is not None:
            settings.add(Setting(key, value, origin="command line"))

    put("framework", "deepspeed")
    put("job.type", job_type)
    if model[:1].isdigit() and model.rstrip("bBmM").replace(".", "").isdigit():
        put("model.policy.params", model)
    else:
        put("model.policy.path", model)
    nodes = 1
    per = gpus
    gpus_per_node = gpus_per_node or min(gpus, 8)  # a node of 8 GPUs unless told
    if gpus_per_node:
        per = min(gpus, gpus_per_node)
        nodes = max(1, -(-gpus // gpus_per_node))
    put("topology.policy.nodes", nodes)
    put("topology.policy.gpus_per_node", per)
    put("zero.stage", zero)
    put("precision.param_dtype", dtype)
    put("precision.grad_accum_dtype", grad_accum_dtype)
    put("offload.optimizer", offload_optimizer)
    put("offload.param", offload_param)
    put("batch.micro_train", micro_batch)
    put("seq.max_len", seq_len)
    put("train.gradient_checkpointing", gradient_checkpointing)
    put("train.flash_attn", flash_attn)
    return Job(f"{model} on {gpus} GPUs", "<command line>", None, "deepspeed", settings, roles=("policy",))


def _bar(value: int, scale: int) -> str:
    if scale <= 0:
        return ""
    n = int(round(BAR_WIDTH * value / scale))
    return "#" * min(n, BAR_WIDTH) + ("!" if value > scale else "")


def _fit(lines: list[str], width: int) -> list[str]:
    """Lines wrapped to ``width`` columns: a term's formula goes under its bar, other text continues indented."""
    import textwrap

    out = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        bar_end = line.find("  ", 4 + 26 + 1 + 11 + 2 + BAR_WIDTH)  # term rows: name, size, bar, then the formula
        if line.startswith("    ") and bar_end != -1 and line[4:5] != " ":
            out.append(line[:bar_end].rstrip())
            out.extend(textwrap.wrap(line[bar_end:].strip(), width, initial_indent=" " * 8,
                                     subsequent_indent=" " * 8, break_on_hyphens=False))
            continue
        lead = " " * (len(line) - len(line.lstrip(" ")))
        out.extend(textwrap.wrap(line, width, subsequent_indent=lead + "    ", break_on_hyphens=False))
    return out


def render_text(title: str, est, width: int = 100) -> str:
    lines = [title]
    scale = est.gpu_memory or max((g.peak for g in est.groups), default=1)
    gpu = est.gpu.name if est.gpu is not None else "GPU"
    for group in est.groups:
        verdict = {True: "fits", False: "DOES NOT FIT", None: "no verdict (no GPU given)"}[group.fits]
        lines.append("")
        lines.append(f"GPU group: {' + '.join(group.names)} - peak {_gib(group.peak)} in the {group.peak_phase} "
                     f"phase of {_gib(est.gpu_memory) if est.gpu_memory else 'unknown'} ({gpu}): {verdict}")
        for r in group.roles:
            lines.append(f"  {r.role}: {r.model}, {r.params / 1e9:.2f}B params, {r.gpus} GPU(s)")
            for t in r.terms:
                lines.append(f"    {t.label:<26} {_gib(t.bytes):>11}  {_bar(t.bytes, scale):<{BAR_WIDTH + 1}} {t.formula}")
            lines.append(f"    {'total (all phases)':<26} {_gib(r.total):>11}")
            if r.kv and r.kv.get("tokens") is not None:
                kv = r.kv
                lines.append(f"    KV cache: {_gib(kv['kv_bytes'])} = {kv['tokens']} tokens; one sequence needs "
                             f"{kv['one_sequence']}, {kv['max_num_seqs']} concurrent need {kv['tokens_needed']}")
        if len(group.phases) > 1:
            lines.append("  phases: " + ", ".join(f"{p} {_gib(group.phase_total(p))}" for p in group.phases))
        if group.shared_process:
            lines.append("  one process per GPU holds these models: their weights and states add up; activations, "
                         "logits and gathered parameters are those of the largest model running; one CUDA context")
    for node in est.nodes:
        lines.append("")
        limit = f" of {_gib(node.limit)} ({node.limit_name})" if node.limit else ""
        verdict = {True: "fits", False: "DOES NOT FIT", None: "no verdict (no host memory given)"}[node.fits]
        ranks = ", ".join(f"{r} x{n}" for r, n in node.ranks.items())
        lines.append(f"Host RAM, node {node.index} ({ranks}): {_gib(node.total)}{limit}: {verdict}")
        host_scale = node.limit or node.total or 1
        for t in node.persistent + node.transient:
            tag = " (transient)" if t in node.transient else ""
            lines.append(f"    {t.name:<26} {_gib(t.bytes):>11}  {_bar(t.bytes, host_scale):<{BAR_WIDTH + 1}} "
                         f"{t.formula}{tag}")
    if est.assumptions:
        lines.append("")
        lines.append("Assumptions:")
        lines.extend(f"  - {a}" for a in est.assumptions)
    return "\n".join(_fit(lines, width))


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--model", help="Hub id, local directory, known name or size (7B, 70b).")
@click.option("--gpus", type=int, help="GPUs the model trains on (data parallel).")
@click.option("--gpus-per-node", type=int)
@click.option("--gpu", "gpu_name", help="GPU model (A100-80GB, H100, RTX4090, ...).")
@click.option("--gpu-memory", help="Usable memory per GPU, overriding the catalog (80GiB).")
@click.option("--host-memory", help="Host RAM per node (1TB).")
@click.option("--container-memory", help="Container memory limit (500GiB).")
@click.option("--zero", type=click.IntRange(0, 3), default=None, help="ZeRO stage.")
@click.option("--offload-optimizer", type=click.Choice(["none", "cpu", "nvme"]), default=None)
@click.option("--offload-param", type=click.Choice(["none", "cpu", "nvme"]), default=None)
@click.option("--dtype", type=click.Choice(["bf16", "fp16", "fp32"]), default=None)
@click.option("--grad-accum-dtype", type=click.Choice(["bf16", "fp16", "fp32"]), default=None)
@click.option("--micro-batch", type=int, default=None)
@click.option("--seq-len", type=int, default=None)
@click.option("--gradient-checkpointing/--no-gradient-checkpointing", default=None)
@click.option("--flash-attn/--no-flash-attn", default=None)
@click.option("--job-type", default="sft", show_default=True, help="sft, dpo, rm (dpo adds a reference model).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def estimate(paths, model, gpus, gpus_per_node, gpu_name, gpu_memory, host_memory, container_memory, zero,
             offload_optimizer, offload_param, dtype, grad_accum_dtype, micro_batch, seq_len, gradient_checkpointing,
             flash_attn, job_type, output_format):
    """Estimate GPU and host memory per role of a launch script, or of a job given by options
    (`rlhf-lint estimate --model Qwen/Qwen2.5-7B --gpus 8 --gpu A100-80GB --zero 3`)."""
    from rlhf_lint.engine.config import ConfigError, Hardware, find_config_file, load_config
    from rlhf_lint.memory.estimate import estimate as run_estimate

    try:
        config = load_config(find_config_file(paths[0] if paths else os.getcwd()))
        overrides = Hardware.from_mapping({"gpu": gpu_name, "gpu-memory": gpu_memory, "gpus-per-node": gpus_per_node,
                                           "host-memory": host_memory, "container-memory": container_memory})
    except ConfigError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    results = []
    if model:
        if paths:
            click.echo("error: give a launch script or --model, not both", err=True)
            sys.exit(2)
        job = _job_from_options(model, gpus or 1, gpus_per_node, zero, offload_optimizer, offload_param, dtype,
                                grad_accum_dtype, micro_batch, seq_len, gradient_checkpointing, flash_attn, job_type)
        hw = config.hardware.merged(overrides)
        results.append((job.name, run_estimate(job, hw, _read_local_config, config.versions)))
    elif paths:
        from rlhf_lint.engine.runner import build_project

        project, unreadable = build_project(list(paths), config)
        for item in unreadable:
            click.echo(f"{item.path}: {item.message}", err=True)
        for job in project.jobs:
            hw = config.hardware
            if job.hardware:
                try:
                    hw = hw.merged(Hardware.from_mapping(job.hardware))
                except ConfigError:
                    pass
            hw = hw.merged(overrides)  # the command line wins over the script's comment

            def read(reference, job=job, project=project):
                found = project.resolve(job.path, reference.rstrip("/") + "/config.json")
                return found.text if found is not None else _read_local_config(reference)

            results.append((job.name, run_estimate(job, hw, read, config.versions)))
        if not results:
            click.echo("no training launch found in " + ", ".join(paths), err=True)
            sys.exit(2)
    else:
        click.echo("error: give a launch script, or --model and --gpus", err=True)
        sys.exit(2)
    if output_format == "json":
        payload = [dict(job=name, **est.as_dict()) for name, est in results]
        click.echo(json.dumps(payload[0] if len(payload) == 1 else payload, indent=2))
    else:
        import shutil

        width = max(60, shutil.get_terminal_size((100, 24)).columns)  # COLUMNS, the terminal, else 100
        click.echo("\n\n".join(render_text(name, est, width) for name, est in results))
