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
    from rlhf_lint.readers.source import read_regular

    try:
        raw, _ = read_regular(os.path.join(os.path.expanduser(reference), "config.json"), 2**20)
        return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError):  # missing, special, too large or not UTF-8: not a config to read
        return None


def launch_reader(project, job):
    """config.json of a model directory a launch names: among the checked files, else a local directory (read as
    data)."""
    def read(reference):
        found = project.resolve(job.path, reference.rstrip("/") + "/config.json")
        return found.text if found is not None else _read_local_config(reference)
    return read


def _job_from_options(model, gpus, gpus_per_node, zero, offload_optimizer, offload_param, dtype, grad_accum_dtype,
                      micro_batch, seq_len, gradient_checkpointing, flash_attn, job_type, extra=None, framework=None):
    from rlhf_lint.frameworks.jobs import Job
    from rlhf_lint.memory.estimate import ASSUMED_SDPA
    from rlhf_lint.model import Setting, Settings

    settings = Settings()

    def put(key, value):
        if value is not None:
            settings.add(Setting(key, value, origin="command line"))

    kind = str(job_type).lower()
    # TRL's GRPOTrainer: the estimate decides on the reference model (beta, the TRL release); DPO-style losses run
    # a frozen reference beside the policy
    default, roles = ("trl", ()) if kind == "grpo" else ("deepspeed", ("policy",))
    framework = framework or default  # a caller may name the trainer (TRL's DPOTrainer, say)
    put("framework", framework)
    put("job.type", job_type)
    if model[:1].isdigit() and model.rstrip("bBmM").replace(".", "").isdigit():
        put("model.policy.params", model)
    else:
        put("model.policy.path", model)
    per = min(gpus, gpus_per_node or 8)  # a node of 8 GPUs unless told
    nodes = max(1, gpus // per)  # whole nodes: estimate() refuses GPUs that do not fill them (see _node_size)
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
    notes = []
    if flash_attn is None:
        # transformers' default attention since 4.36 is SDPA, whose kernels hold no seq x seq scores
        settings.add(Setting("train.flash_attn", True, origin=ASSUMED_SDPA))
        notes.append("attention kernel not given: SDPA or flash attention assumed (transformers' default since "
                     "4.36), no seq x seq scores; --no-flash-attn sizes eager attention")
    if gradient_checkpointing is None:
        notes.append("gradient checkpointing not given: off, as the HF Trainer's default (--gradient-checkpointing "
                     "to keep one layer's activations)")
    for key, value in (extra or {}).items():
        put(key, value)
    from rlhf_lint.memory.estimate import PAIRED_TYPES

    if kind in PAIRED_TYPES:
        roles = ()  # the estimate decides whether a reference copy is held (_reference_free)
    if kind in PAIRED_TYPES | {"grpo"}:
        put("topology.ref.nodes", nodes)
        put("topology.ref.gpus_per_node", per)
    return Job(f"{model} on {gpus} GPUs", "<command line>", None, framework, settings, roles=roles,
               assumptions=notes)


def _add_ds_config(job, path: str) -> None:
    """The DeepSpeed config's settings under those the flags gave (a flag wins, as a launch's own value wins over an
    "auto" the HF Trainer fills); a file that cannot be read or parsed is refused (exit 2)."""
    from rlhf_lint.engine.project import parse_source
    from rlhf_lint.engine.runner import read_source
    from rlhf_lint.frameworks.deepspeed import settings_from_ds_config
    from rlhf_lint.model import UNKNOWN
    from rlhf_lint.readers.source import Source

    source = read_source(path, True)
    if not isinstance(source, Source):
        _refuse(f"--ds-config {path}: {getattr(source, 'message', 'not a file')}")
    source.kind = "ds_config"
    parse_source(source)
    if source.tree is None:
        why = source.parse_error or (source.skipped[0][1] if source.skipped else "not parsed")
        _refuse(f"--ds-config {path}: {why}")
    from rlhf_lint.readers.json import JObject

    if not isinstance(getattr(source.tree, "root", None), JObject):
        _refuse(f"--ds-config {path}: not a DeepSpeed config (its top level is not a JSON object)")
    for setting in settings_from_ds_config(source.tree, path):
        if setting.value is not UNKNOWN and job.settings.get(setting.key) is None:
            job.settings.add(setting)


def _width() -> int:
    """The terminal's width on a terminal, else 100 (logs, CI)."""
    import shutil

    if sys.stdout.isatty():
        return max(60, shutil.get_terminal_size((100, 24)).columns)
    return 100


def _wrap(text: str, width: int, indent: str) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent,
                         break_long_words=True, break_on_hyphens=False) or [indent.rstrip()]


def render_text(title: str, est, width: int | None = None) -> str:
    width = width or _width()
    bar = max(10, min(BAR_WIDTH, width - 48))
    lines = _wrap(title, width, "")
    scale = est.gpu_memory or max((g.peak for g in est.groups), default=1)
    gpu = est.gpu.name if est.gpu is not None else "GPU"

    def row(name: str, value: int, scale: int, formula: str, tag: str = "") -> None:
        n = int(round(bar * value / scale)) if scale > 0 else 0
        drawn = "#" * min(n, bar) + ("!" if value > scale else "")
        lines.append(f"    {name[:26]:<26} {_gib(value):>11}  {drawn}".rstrip())
        lines.extend(_wrap(formula + tag, width, " " * 8))

    for group in est.groups:
        if group.fits is None:
            verdict = "no verdict (no GPU given)"
        elif group.certain_overflow:
            verdict = "DOES NOT FIT"
        elif group.tight:
            verdict = "TIGHT (the band straddles the GPU)"
        else:
            verdict = "fits"
        lines.append("")
        lines += _wrap(f"GPU group: {' + '.join(group.names)} - peak {_gib(group.peak)} (band {_gib(group.low_peak)} "
                       f"to {_gib(max(group.high_peak, group.peak))}) in the {group.peak_phase} phase of "
                       f"{_gib(est.gpu_memory) if est.gpu_memory else 'unknown'} ({gpu}): {verdict}", width, "")
        for r in group.roles:
            lines += _wrap(f"{r.role}: {r.model}, {r.params / 1e9:.2f}B params, {r.gpus} GPU(s)", width, "  ")
            for t in r.terms:
                row(t.label, t.bytes, scale, t.formula)
            lines.append(f"    {'total (all phases)':<26} {_gib(r.total):>11}")
            if r.kv and r.kv.get("tokens") is not None:
                kv = r.kv
                lines += _wrap(f"KV cache: {_gib(kv['kv_bytes'])} = {kv['tokens']} tokens; one sequence needs "
                               f"{kv['one_sequence']}, {kv['max_num_seqs']} concurrent need {kv['tokens_needed']}",
                               width, "    ")
        if len(group.phases) > 1:
            lines += _wrap("phases: " + ", ".join(f"{p} {_gib(group.phase_total(p))}" for p in group.phases),
                           width, "  ")
        if group.shared_process:
            lines += _wrap("one process per GPU holds these models: their weights and states add up; activations, "
                           "logits and gathered parameters are those of the largest model running; one CUDA context",
                           width, "  ")
    for node in est.nodes:
        lines.append("")
        limit = f" of {_gib(node.limit)} ({node.limit_name})" if node.limit else ""
        verdict = {True: "fits", False: "DOES NOT FIT", None: "no verdict (no host memory given)"}[node.fits]
        ranks = ", ".join(f"{r} x{n}" for r, n in node.ranks.items())
        lines += _wrap(f"Host RAM, node {node.index} ({ranks}): {_gib(node.total)}{limit}: {verdict}", width, "")
        host_scale = node.limit or node.total or 1
        for t in node.persistent + node.transient:
            row(t.name, t.bytes, host_scale, t.formula, " (transient)" if t in node.transient else "")
    if est.assumptions:
        lines.append("")
        lines.append("Assumptions:")
        for a in est.assumptions:
            lines += _wrap(f"- {a}", width, "  ")
    return "\n".join(lines)


# the options that apply to a launch script too: where it runs and how the answer is printed
LAUNCH_OPTIONS = {"gpus_per_node", "gpu_name", "gpu_memory", "host_memory", "container_memory", "output_format"}


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return bool(text) and text.lower() not in ("nan", "inf", "infinity")


def _refuse(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def _node_size(gpus: int, option: int | None, configured: int | None) -> int:
    """GPUs per node of a job given by options: --gpus-per-node, else the configuration's gpus-per-node, else 8.
    GPUs that do not fill whole nodes are refused: launchers start as many processes on every node, and the
    estimate once rounded 12 GPUs in nodes of 8 up to 16, silently, sharding the states over 16."""
    size = option or configured or 8
    if gpus > size and gpus % size:
        nodes = (f"--gpus-per-node {size}" if option else f"gpus-per-node = {size} (the configuration)" if configured
                 else f"{size} GPUs (assumed: give --gpus-per-node)")
        divisor = max(d for d in range(1, size + 1) if gpus % d == 0)
        _refuse(f"--gpus {gpus} does not fill whole nodes of {nodes}; launchers start as many processes on every "
                f"node: give --gpus {gpus // size * size} or {-(-gpus // size) * size}, or --gpus-per-node {divisor}")
    return size


def _check_parallel_sizes(gpus: int, ring: int | None, sequence: int | None, expert: int | None) -> None:
    """Ring attention and Ulysses SP split each sequence over ring x SP ranks, expert parallelism the experts over
    EP ranks: each group must divide the GPUs (16 SP ranks on 2 GPUs divided the activations by 16)."""
    split = " x ".join(f"{name} {size}" for name, size in (("--ring-attn-size", ring),
                                                             ("--sequence-parallel-size", sequence)) if size)
    groups = ((split, (ring or 1) * (sequence or 1)), (f"--expert-parallel-size {expert}", expert or 1))
    for given, ranks in groups:
        if ranks > 1 and gpus % ranks:
            _refuse(f"{given} does not divide --gpus {gpus}: each group of {ranks} ranks runs on GPUs of its own")


def _check_megatron_sizes(gpus: int, tp: int, pp: int, cp: int, ep: int) -> None:
    """What Megatron-Core's initialize_model_parallel refuses (expert tensor parallel 1 from the options)."""
    from rlhf_lint.memory.megatron import Layout, refused

    why = refused(Layout(world=gpus, tp=tp, pp=pp, cp=cp, ep=ep, etp=1))
    if why is not None:
        _refuse(f"{why.replace(' GPUs', ' (--gpus)', 1)}: Megatron-Core refuses the layout")


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--model", help="Hub id, local directory, known name or size (7B, 70b).")
@click.option("--gpus", type=click.IntRange(min=1), help="GPUs the model trains on (data parallel).")
@click.option("--gpus-per-node", type=click.IntRange(min=1))
@click.option("--gpu", "gpu_name", help="GPU model (A100-80GB, H100, RTX4090, ...).")
@click.option("--gpu-memory", help="Usable memory per GPU, overriding the catalog (80GiB).")
@click.option("--host-memory", help="Host RAM per node (1TB).")
@click.option("--container-memory", help="Container memory limit (500GiB).")
@click.option("--zero", type=click.IntRange(0, 3), default=None, help="ZeRO stage.")
@click.option("--offload-optimizer", type=click.Choice(["none", "cpu", "nvme"]), default=None)
@click.option("--offload-param", type=click.Choice(["none", "cpu", "nvme"]), default=None)
@click.option("--dtype", type=click.Choice(["bf16", "fp16", "fp32"]), default=None)
@click.option("--grad-accum-dtype", type=click.Choice(["bf16", "fp16", "fp32"]), default=None)
@click.option("--micro-batch", type=click.IntRange(min=1), default=None)
@click.option("--seq-len", type=click.IntRange(min=1), default=None)
@click.option("--gradient-checkpointing/--no-gradient-checkpointing", default=None)
@click.option("--flash-attn/--no-flash-attn", default=None)
@click.option("--job-type", type=click.Choice(["sft", "rm", "pt", "dpo", "kto", "ipo", "simpo", "orpo", "grpo"]),
              default="sft", show_default=True,
              help="dpo (and kto, ipo) adds the reference model; simpo and orpo pair chosen and rejected without "
                   "one; grpo: TRL's GRPOTrainer generating with HF generate.")
@click.option("--prompt-len", type=click.IntRange(min=1), default=None,
              help="grpo: max_prompt_length (with --completion-len instead of --seq-len).")
@click.option("--completion-len", type=click.IntRange(min=1), default=None, help="grpo: max_completion_length.")
@click.option("--beta", type=float, default=None, help="grpo: KL coefficient (0: no reference model).")
@click.option("--pin-memory/--no-pin-memory", default=None,
              help="offload_param.pin_memory and offload_optimizer.pin_memory: offloaded parameters and optimizer "
                   "partitions in pinned host memory (power-of-two blocks).")
@click.option("--strategy", type=click.Choice(["deepspeed", "ddp", "fsdp", "fsdp2", "megatron"]), default=None,
              help="ddp: torch data parallelism without DeepSpeed (HF Trainer): no ZeRO, torch's dtypes. fsdp, "
                   "fsdp2: FSDP full shard under the HF Trainer (accelerate); --offload-param cpu is its CPU "
                   "offload. megatron: Megatron-Core (ms-swift's `megatron sft`): --tensor-parallel-size, "
                   "--pipeline-parallel-size, --context-parallel-size, --expert-parallel-size, --recompute; "
                   "--offload-optimizer cpu is its optimizer CPU offload.")
@click.option("--tensor-parallel-size", type=click.IntRange(min=1), default=None,
              help="megatron: tensor parallel ranks (with sequence parallelism).")
@click.option("--pipeline-parallel-size", type=click.IntRange(min=1), default=None,
              help="megatron: pipeline stages.")
@click.option("--context-parallel-size", type=click.IntRange(min=1), default=None,
              help="megatron: context parallel ranks each sequence is split over.")
@click.option("--recompute", type=click.Choice(["full", "selective", "none"]), default=None,
              help="megatron: recompute granularity (full: uniform, one layer a chunk). Default selective.")
@click.option("--distributed-optimizer/--no-distributed-optimizer", default=None,
              help="megatron: fp32 master and Adam states split over the data-parallel ranks (default on).")
@click.option("--global-batch", type=click.IntRange(min=1), default=None,
              help="megatron: global batch (pipeline micro batches in flight).")
@click.option("--ds-config", "ds_config", type=click.Path(dir_okay=False), default=None,
              help="A DeepSpeed config: its ZeRO stage, offload, dtypes, bucket sizes, sub_group_size and stage-3 "
                   "limits (the other flags win).")
@click.option("--master-dtype", type=click.Choice(["bf16", "fp16", "fp32"]), default=None,
              help="Dtype of the weights the optimizer updates (bf16 with --dtype bf16: no fp32 master copy).")
@click.option("--adapter-dtype", type=click.Choice(["bf16", "fp16", "fp32"]), default=None,
              help="ddp with --lora-rank: the adapters' dtype (default: fp32, PEFT's autocast_adapter_dtype).")
@click.option("--optimizer", default=None, help="adamw, adamw_8bit, paged_adamw_8bit, adafactor, sgd, lion, ...")
@click.option("--lora-rank", type=click.IntRange(min=1), default=None, help="Train LoRA adapters of this rank.")
@click.option("--lora-targets", default=None, help="Comma-separated modules (q_proj,v_proj); default all linear.")
@click.option("--lora-modules-to-save", default=None,
              help="Comma-separated modules trained in full beside LoRA (embed_tokens,lm_head: PEFT modules_to_save).")
@click.option("--quantization", type=click.Choice(["none", "4bit", "8bit"]), default=None,
              help="Frozen base weights quantised (QLoRA: 4bit).")
@click.option("--fused-loss/--no-fused-loss", default=None, help="Chunked/fused cross entropy (Liger): no logits.")
@click.option("--freeze-vision/--no-freeze-vision", default=None,
              help="Multimodal full tuning: vision tower and projector frozen (LLaMA-Factory, ms-swift default).")
@click.option("--packing/--no-packing", default=None, help="Samples packed into micro batches (lengths a bound).")
@click.option("--max-tokens-per-gpu", type=click.IntRange(min=1), default=None,
              help="Token budget per micro batch and GPU (dynamic batching).")
@click.option("--grad-accum", type=click.IntRange(min=1), default=None,
              help="gradient_accumulation_steps: with 1 the gradients are written as the backward frees the loss; "
                   "not given, they are counted, but not at the band's low end.")
@click.option("--ring-attn-size", type=click.IntRange(min=1), default=None)
@click.option("--sequence-parallel-size", type=click.IntRange(min=1), default=None, help="Ulysses SP ranks.")
@click.option("--expert-parallel-size", type=click.IntRange(min=1), default=None,
              help="MoE: GPUs the experts of a layer are spread over.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def estimate(paths, model, gpus, gpus_per_node, gpu_name, gpu_memory, host_memory, container_memory, zero,
             offload_optimizer, offload_param, dtype, grad_accum_dtype, micro_batch, seq_len, gradient_checkpointing,
             flash_attn, job_type, strategy, master_dtype, adapter_dtype, optimizer, lora_rank, lora_targets,
             lora_modules_to_save, quantization, fused_loss, packing, max_tokens_per_gpu, ring_attn_size,
             sequence_parallel_size,
             expert_parallel_size, output_format, prompt_len=None, completion_len=None, beta=None, pin_memory=None,
             freeze_vision=None, ds_config=None, grad_accum=None, tensor_parallel_size=None,
             pipeline_parallel_size=None, context_parallel_size=None, recompute=None, distributed_optimizer=None,
             global_batch=None):
    """Estimate GPU and host memory per role of a launch script, or of a job given by options
    (`rlhf-lint estimate --model Qwen/Qwen2.5-7B --gpus 8 --gpu A100-80GB --zero 3`)."""
    from rlhf_lint.engine.config import ConfigError, Hardware, find_config_file, flag, load_config
    from rlhf_lint.memory.estimate import estimate as run_estimate
    from rlhf_lint.model import in_range

    counts = {"--gpus": gpus, "--micro-batch": micro_batch, "--seq-len": seq_len,
              "--lora-rank": lora_rank, "--max-tokens-per-gpu": max_tokens_per_gpu, "--ring-attn-size": ring_attn_size,
              "--sequence-parallel-size": sequence_parallel_size, "--expert-parallel-size": expert_parallel_size,
              "--prompt-len": prompt_len, "--completion-len": completion_len}
    for name, value in counts.items():
        if value is not None and not in_range(value):  # the estimate would drop it as unknown, silently
            _refuse(f"{name} {value}: out of range for any launch")
    if beta is not None and (beta != beta or not in_range(beta)):
        _refuse(f"--beta {beta}: not a finite number")
    if optimizer is not None and not optimizer.strip():
        _refuse("--optimizer '': name an optimizer (adamw, adamw_8bit, adafactor, ...) or leave the option out")
    if lora_targets is not None and not any(t.strip() for t in lora_targets.split(",")):
        _refuse(f"--lora-targets {lora_targets!r} names no module: write q_proj,v_proj or leave it out (all linear)")
    if lora_modules_to_save is not None and not lora_rank:
        _refuse("--lora-modules-to-save trains modules beside LoRA adapters: give --lora-rank too")
    if strategy not in (None, "deepspeed"):
        for name, value in (("--zero", zero), ("--offload-optimizer", offload_optimizer), ("--ds-config", ds_config)):
            if value is not None:
                _refuse(f"{name} is a DeepSpeed option; --strategy {strategy} runs without DeepSpeed"
                        + (" (FSDP offloads with --offload-param cpu)" if strategy.startswith("fsdp") else ""))
        if strategy == "ddp" and offload_param not in (None, "none"):
            _refuse("--offload-param: --strategy ddp keeps every parameter on the GPU (use fsdp or DeepSpeed)")
        if strategy == "megatron" and offload_param not in (None, "none"):
            _refuse("--offload-param: Megatron-Core offloads the optimizer only (--offload-optimizer cpu)")
    megatron_only = {"--tensor-parallel-size": tensor_parallel_size, "--pipeline-parallel-size": pipeline_parallel_size,
                     "--context-parallel-size": context_parallel_size, "--recompute": recompute,
                     "--distributed-optimizer": distributed_optimizer, "--global-batch": global_batch}
    if strategy != "megatron":
        given_megatron = [name for name, value in megatron_only.items() if value is not None]
        if given_megatron:
            _refuse(f"{', '.join(given_megatron)}: Megatron-Core options; give --strategy megatron")
    elif gradient_checkpointing is not None:
        _refuse("--gradient-checkpointing: under --strategy megatron give --recompute full|selective|none")
    if quantization not in (None, "none") and not lora_rank:
        _refuse("--quantization needs --lora-rank (a quantised base is frozen; only adapters train)")
    if model is not None:
        bare = model.strip()
        number = bare.lstrip("+-")
        unit = number.rstrip("bBmM")
        if _is_number(number) and unit == number:
            _refuse(f"--model {model!r} has no unit: write the size as {number}B (or {number}M), or name the model")
        if _is_number(unit) and (bare.startswith("-") or float(unit) <= 0):
            _refuse(f"--model {model!r}: a model size must be positive")
    if beta is not None and beta < 0:
        _refuse(f"--beta {beta}: the KL coefficient cannot be negative (0: no reference model)")
    if paths and not model:
        # a launch's own settings are read from its files: a job option would be ignored silently
        from click.core import ParameterSource

        ctx = click.get_current_context()
        given = [p.opts[0] for p in ctx.command.params if isinstance(p, click.Option)
                 and p.name not in LAUNCH_OPTIONS and ctx.get_parameter_source(p.name) is ParameterSource.COMMANDLINE]
        if given:
            _refuse(f"{', '.join(given)} describe{'s' if len(given) == 1 else ''} a job given by --model; a launch "
                    f"script's settings are read from its files (only the hardware options apply to it)")
    try:
        # the options are checked as the configuration's hardware values are: a unit, a known GPU, positive
        overrides = Hardware.from_mapping({"gpu": gpu_name, "gpu-memory": gpu_memory, "gpus-per-node": gpus_per_node,
                                           "host-memory": host_memory, "container-memory": container_memory}, flag)
        config = load_config(find_config_file(paths[0] if paths else os.getcwd()))
    except ConfigError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    results = []
    if model:
        if paths:
            click.echo("error: give a launch script or --model, not both", err=True)
            sys.exit(2)
        from rlhf_lint.memory.catalog import resolve_model

        resolved = resolve_model(model, _read_local_config)
        if resolved.arch is None and resolved.param_count is None:  # an empty estimate would follow: say so instead
            _refuse(f"{resolved.note}: give a hub id the catalog knows, a local directory with config.json, or a size "
                    f"such as 7B")
        extra = {"train.strategy": strategy, "precision.master_dtype": master_dtype,
                 "precision.adapter_dtype": adapter_dtype, "train.optimizer": optimizer,
                 "train.lora_rank": lora_rank, "train.quantization": quantization, "train.fused_loss": fused_loss,
                 "train.packing": packing, "train.ring_attn_size": ring_attn_size,
                 "train.sequence_parallel_size": sequence_parallel_size,
                 "train.expert_parallel_size": expert_parallel_size, "seq.prompt_max_len": prompt_len,
                 "seq.generate_max_len": completion_len, "trl.beta": beta,
                 "deepspeed.offload_param_pin_memory": pin_memory,
                 "deepspeed.offload_optimizer_pin_memory": pin_memory, "train.freeze_vision": freeze_vision,
                 "train.lora_targets": tuple(t.strip() for t in lora_targets.split(",") if t.strip())
                 if lora_targets else None,
                 "train.lora_modules_to_save": tuple(t.strip() for t in lora_modules_to_save.split(",") if t.strip())
                 if lora_modules_to_save else None}
        if max_tokens_per_gpu:
            extra |= {"batch.dynamic": True, "batch.max_tokens_per_gpu": max_tokens_per_gpu}
        if strategy == "megatron":
            tp = tensor_parallel_size or 1
            extra |= {"megatron.tensor_parallel": tp, "megatron.pipeline_parallel": pipeline_parallel_size or 1,
                      "megatron.context_parallel": context_parallel_size or 1,
                      "megatron.expert_parallel": expert_parallel_size or 1, "megatron.expert_tensor_parallel": 1,
                      "megatron.sequence_parallel": tp > 1, "megatron.recompute": recompute or "selective",
                      "megatron.distributed_optimizer": distributed_optimizer is not False,
                      "batch.train": global_batch, "train.expert_parallel_size": None,
                      "topology.world_size": gpus or 1}
        if grad_accum:
            extra["batch.grad_accum"] = grad_accum
        gpus = gpus or 1
        node = _node_size(gpus, gpus_per_node, config.hardware.gpus_per_node)
        _check_parallel_sizes(gpus, ring_attn_size, sequence_parallel_size, expert_parallel_size)
        if strategy == "megatron":
            _check_megatron_sizes(gpus, tensor_parallel_size or 1, pipeline_parallel_size or 1,
                                  context_parallel_size or 1, expert_parallel_size or 1)
        job = _job_from_options(model, gpus, node, zero, offload_optimizer, offload_param, dtype,
                                grad_accum_dtype, micro_batch, seq_len, gradient_checkpointing, flash_attn, job_type,
                                extra, "hf" if strategy in ("fsdp", "fsdp2") else None)
        if ds_config is not None:
            _add_ds_config(job, ds_config)
        hw = config.hardware.merged(overrides)
        results.append((job.name, run_estimate(job, hw, _read_local_config, config.versions)))
    elif paths:
        from rlhf_lint.engine.runner import build_project

        from rlhf_lint.frameworks.edge import target_versions
        from rlhf_lint.memory.estimate import VERSIONED_PACKAGES

        project, unreadable = build_project(list(paths), config)
        for item in unreadable:
            click.echo(f"{item.path}: {item.message}", err=True)
        versions = target_versions(project, VERSIONED_PACKAGES)
        for job in project.jobs:
            for message in dict.fromkeys(config.hardware_errors(job.hardware).values()):
                click.echo(f"warning: {job.path}: hardware comment: {message}; this word is ignored", err=True)
            hw = config.hardware_for(job.hardware).merged(overrides)  # the command line wins over the comment
            results.append((job.name, run_estimate(job, hw, launch_reader(project, job), versions)))
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
