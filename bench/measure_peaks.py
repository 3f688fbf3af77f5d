"""Real GPU peaks of small training runs, for the accuracy table (issue 15, item 3).

Each case trains a randomly initialised model built from the catalog's config.json shapes (schemas/models.json: no
weights are downloaded) for three steps on one GPU, in a process of its own, and records
torch.cuda.max_memory_allocated / max_memory_reserved overall and per phase (forward+backward, optimizer step).

    python bench/measure_peaks.py --out peaks.jsonl         # every case, one process each, one JSON line each
    python bench/measure_peaks.py --case Z2                 # one case, its JSON printed
    python bench/measure_peaks.py --smoke                   # tiny shapes on the CPU: the harness, not the figures

Needs torch, transformers, and deepspeed / peft for the cases that use them; the test suite never runs it. A case's
keys are the calibration rows' config keys (bench/calibration/measured.json), so a reading becomes a row unchanged.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 2**30
STEPS = 3

# The HF Trainer's loop without the Trainer: autocast under bf16 unless DeepSpeed casts the model itself, torch's
# AdamW (foreach unless fused), zero_grad(set_to_none=True), use_cache off, checkpointing through
# gradient_checkpointing_enable() with transformers' defaults.
_BASE = {"gpus": 1, "dtype": "bf16", "flash": True}
CASES: dict[str, dict] = {
    "Z2a": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "zero": 2, "optimizer": "adamw_torch", "micro_batch": 4,
                    "seq_len": 2048, "checkpointing": True},
    "Z3a": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "zero": 3, "optimizer": "adamw_torch", "micro_batch": 4,
                    "seq_len": 2048, "checkpointing": True},
    "Db1": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "strategy": "ddp", "master_dtype": "fp32",
                    "optimizer": "adamw_torch", "micro_batch": 4, "seq_len": 2048, "checkpointing": True},
    "Db2": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "strategy": "ddp", "master_dtype": "bf16",
                    "optimizer": "adamw_torch", "micro_batch": 4, "seq_len": 2048, "checkpointing": True},
    "Db3": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "strategy": "ddp", "master_dtype": "bf16",
                    "optimizer": "adamw_torch_fused", "micro_batch": 4, "seq_len": 2048, "checkpointing": True},
    "Fs1": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "strategy": "fsdp2", "optimizer": "adamw_torch",
                    "micro_batch": 4, "seq_len": 2048, "checkpointing": True},
    "Z0a": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "zero": 0, "optimizer": "adamw_torch", "micro_batch": 4,
                    "seq_len": 2048, "checkpointing": True},
    "Lo1": _BASE | {"model": "Qwen/Qwen2.5-3B", "strategy": "ddp", "master_dtype": "bf16", "lora_rank": 16,
                    "optimizer": "adamw_torch", "micro_batch": 4, "seq_len": 2048, "checkpointing": True},
    "Db4": _BASE | {"model": "Qwen/Qwen2.5-3B", "strategy": "ddp", "master_dtype": "bf16",
                    "optimizer": "adamw_torch_fused", "micro_batch": 2, "seq_len": 2048, "checkpointing": False},
    "Ea1": _BASE | {"model": "meta-llama/Llama-3.2-1B", "strategy": "ddp", "master_dtype": "bf16",
                    "optimizer": "adamw_torch_fused", "micro_batch": 4, "seq_len": 1024, "checkpointing": False,
                    "flash": False},
    "Z3b": _BASE | {"model": "Qwen/Qwen2.5-3B", "zero": 3, "optimizer": "adamw_torch_fused", "micro_batch": 2,
                    "seq_len": 4096, "checkpointing": True},
    "Z2b": _BASE | {"model": "meta-llama/Llama-3.2-3B", "zero": 2, "optimizer": "adamw_torch_fused",
                    "micro_batch": 4, "seq_len": 4096, "checkpointing": True},
    "Db5": _BASE | {"model": "Qwen/Qwen3-1.7B", "strategy": "ddp", "master_dtype": "bf16",
                    "optimizer": "adamw_torch_fused", "micro_batch": 1, "seq_len": 8192, "checkpointing": False},
    "Db7": _BASE | {"model": "Qwen/Qwen2.5-7B", "strategy": "ddp", "master_dtype": "bf16",
                    "optimizer": "adamw_torch_fused", "micro_batch": 2, "seq_len": 4096, "checkpointing": True},
    # second batch: gradients kept between micro batches, an older transformers, a logits-bound run
    "Db2g": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "strategy": "ddp", "master_dtype": "bf16",
                     "optimizer": "adamw_torch", "micro_batch": 4, "seq_len": 2048, "checkpointing": True,
                     "grad_accum": 2},
    "Z2ag": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "zero": 2, "optimizer": "adamw_torch", "micro_batch": 4,
                     "seq_len": 2048, "checkpointing": True, "grad_accum": 2},
    "Db6": _BASE | {"model": "Qwen/Qwen2.5-0.5B", "strategy": "ddp", "master_dtype": "bf16",
                    "optimizer": "adamw_torch_fused", "micro_batch": 8, "seq_len": 2048, "checkpointing": True},
    "Db2o": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "strategy": "ddp", "master_dtype": "bf16",
                     "optimizer": "adamw_torch", "micro_batch": 4, "seq_len": 2048, "checkpointing": True,
                     "transformers_version": "4.44.2"},
    "Db4o": _BASE | {"model": "Qwen/Qwen2.5-3B", "strategy": "ddp", "master_dtype": "bf16",
                     "optimizer": "adamw_torch_fused", "micro_batch": 2, "seq_len": 2048, "checkpointing": False,
                     "transformers_version": "4.44.2"},
    # third batch: ZeRO-3 with two micro batches per step (the gist's P9 and P10 differ only there, by 25 GiB), CPU
    # offload of the optimizer and of the parameters (host memory read too), fp16 with its loss scaler, Liger's fused
    # linear cross entropy against the same run with full logits, and a ZeRO-3 run near the card's edge
    "Z3ag": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "zero": 3, "optimizer": "adamw_torch", "micro_batch": 4,
                     "seq_len": 2048, "checkpointing": True, "grad_accum": 2},
    "Lg1": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "strategy": "ddp", "master_dtype": "bf16",
                    "optimizer": "adamw_torch_fused", "micro_batch": 4, "seq_len": 4096, "checkpointing": True,
                    "fused_loss": True},
    "Lg0": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "strategy": "ddp", "master_dtype": "bf16",
                    "optimizer": "adamw_torch_fused", "micro_batch": 4, "seq_len": 4096, "checkpointing": True},
    "Z2o": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "zero": 2, "optimizer": "adamw_torch", "micro_batch": 4,
                    "seq_len": 2048, "checkpointing": True, "offload_optimizer": "cpu",
                    "offload_optimizer_pin_memory": True},
    "Z3o": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "zero": 3, "optimizer": "adamw_torch", "micro_batch": 4,
                    "seq_len": 2048, "checkpointing": True, "offload_optimizer": "cpu", "offload_param": "cpu",
                    "offload_optimizer_pin_memory": True, "offload_param_pin_memory": True},
    "Z2h": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "zero": 2, "dtype": "fp16", "optimizer": "adamw_torch",
                    "micro_batch": 4, "seq_len": 2048, "checkpointing": True},
    "Z3c": _BASE | {"model": "Qwen/Qwen2.5-7B", "zero": 3, "optimizer": "adamw_torch_fused", "micro_batch": 2,
                    "seq_len": 4096, "checkpointing": True},
    # fourth batch, held out from the host model fitted on Z2o and Z3o: pin_memory off, other sizes (other
    # power-of-two roundings), ZeRO-3 offload of another model; one optimizer step is enough for the host reading
    "Z2on": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "zero": 2, "optimizer": "adamw_torch", "micro_batch": 4,
                     "seq_len": 2048, "checkpointing": True, "offload_optimizer": "cpu",
                     "offload_optimizer_pin_memory": False},
    "L2o": _BASE | {"model": "meta-llama/Llama-3.2-1B", "zero": 2, "optimizer": "adamw_torch", "micro_batch": 4,
                    "seq_len": 2048, "checkpointing": True, "offload_optimizer": "cpu",
                    "offload_optimizer_pin_memory": True},
    "L3o": _BASE | {"model": "meta-llama/Llama-3.2-1B", "zero": 3, "optimizer": "adamw_torch", "micro_batch": 4,
                    "seq_len": 2048, "checkpointing": True, "offload_optimizer": "cpu", "offload_param": "cpu",
                    "offload_optimizer_pin_memory": True, "offload_param_pin_memory": True},
    "Z2o3": _BASE | {"model": "Qwen/Qwen2.5-3B", "zero": 2, "optimizer": "adamw_torch", "micro_batch": 4,
                     "seq_len": 2048, "checkpointing": True, "offload_optimizer": "cpu",
                    "offload_optimizer_pin_memory": True},
    # prepared for the next lent GPU: FSDP2 rebuilt (Fs1's optimizer took the parameters fully_shard replaced),
    # and FSDP2 with CPUOffloadPolicy (pinned host shards, host RAM read)
    "Fs1b": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "strategy": "fsdp2", "optimizer": "adamw_torch",
                     "micro_batch": 4, "seq_len": 2048, "checkpointing": True},
    "Fs2o": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "strategy": "fsdp2", "optimizer": "adamw_torch",
                     "micro_batch": 4, "seq_len": 2048, "checkpointing": True, "offload_param": "cpu"},
    # fifth batch: L3o over three steps (its steady state, past the parameter coordinator's first trace), and ZeRO-2
    # offload with two micro batches per step (DeepSpeed's host accumulation buffers, not in the host model)
    "L3os": _BASE | {"model": "meta-llama/Llama-3.2-1B", "zero": 3, "optimizer": "adamw_torch", "micro_batch": 4,
                     "seq_len": 2048, "checkpointing": True, "offload_optimizer": "cpu", "offload_param": "cpu",
                     "offload_optimizer_pin_memory": True, "offload_param_pin_memory": True},
    "Z2og": _BASE | {"model": "Qwen/Qwen2.5-1.5B", "zero": 2, "optimizer": "adamw_torch", "micro_batch": 4,
                     "seq_len": 2048, "checkpointing": True, "offload_optimizer": "cpu",
                     "offload_optimizer_pin_memory": True, "grad_accum": 2},
}
ONE_STEP = {"Z2on", "L2o", "L3o", "Z2o3"}
# a case that names a transformers release runs with it first on the path: SITES/transformers-RELEASE
SITES = os.environ.get("MEASURE_SITES", "/tmp/sites")

ARCHITECTURES = ("qwen2", "qwen3", "llama")  # transformers model types, found in the hub id


def catalog_entry(model_id: str) -> dict:
    with open(os.path.join(ROOT, "schemas", "models.json"), encoding="utf-8") as fh:
        for entry in json.load(fh)["models"]:
            if entry["id"] == model_id:
                return entry
    raise KeyError(model_id)


def model_config(model_id: str, flash: bool, smoke: bool):
    from transformers import AutoConfig

    entry = catalog_entry(model_id)
    arch = next(a for a in ARCHITECTURES if a in model_id.lower().replace(".", "").replace("-", ""))
    shapes = {"hidden_size": entry["hidden_size"], "num_hidden_layers": entry["num_layers"],
              "num_attention_heads": entry["num_heads"], "num_key_value_heads": entry["num_kv_heads"],
              "intermediate_size": entry["intermediate_size"], "vocab_size": entry["vocab_size"],
              "tie_word_embeddings": entry.get("tie_embeddings", False), "max_position_embeddings": 32768,
              "use_cache": False}
    if entry.get("head_dim"):
        shapes["head_dim"] = entry["head_dim"]
    if smoke:
        shapes |= {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                   "intermediate_size": 128, "vocab_size": 512, "head_dim": 16}
    config = AutoConfig.for_model(arch, **shapes)
    config._attn_implementation = "sdpa" if flash else "eager"
    return config


@contextlib.contextmanager
def default_dtype(dtype):
    import torch

    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def _init_single_rank(port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                      LOCAL_WORLD_SIZE="1")


def host_memory() -> dict:
    """This process's resident host memory now and at its highest (GiB), as Linux's /proc/self/status gives them."""
    out = {}
    with contextlib.suppress(OSError):
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(value.split()[0]) * 1024 / GIB
    return out


def fused_loss(model, ids):
    """Liger's fused linear cross entropy on the last hidden states: the loss without full logits."""
    from liger_kernel.transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss

    hidden = model.model(input_ids=ids, use_cache=False).last_hidden_state[:, :-1]
    labels = ids[:, 1:]
    return LigerFusedLinearCrossEntropyLoss()(model.lm_head.weight, hidden.reshape(-1, hidden.shape[-1]),
                                              labels.reshape(-1))


def run_case(case: dict, smoke: bool = False, steps: int = STEPS) -> dict:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    device = "cpu" if smoke else "cuda"
    cuda = device == "cuda"
    if cuda:
        torch.cuda.set_device(0)
        torch.cuda.init()
    stats = {"phases": []}
    peak = {"allocated": 0, "reserved": 0}

    def mark(phase: str | None) -> None:
        if not cuda:
            return
        torch.cuda.synchronize()
        alloc, reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
        peak["allocated"], peak["reserved"] = max(peak["allocated"], alloc), max(peak["reserved"], reserved)
        if phase:
            stats["phases"].append({"phase": phase, "peak_allocated_gib": alloc / GIB,
                                    "now_allocated_gib": torch.cuda.memory_allocated() / GIB})
        torch.cuda.reset_peak_memory_stats()

    zero, strategy = case.get("zero"), case.get("strategy")
    bf16 = torch.bfloat16
    bits16 = torch.float16 if case["dtype"] == "fp16" else bf16  # the 16-bit dtype DeepSpeed and pure runs hold
    # DeepSpeed and pure-bf16 runs hold 16-bit weights; fp32 master and FSDP's sharded master hold fp32
    load_dtype = torch.float32 if (strategy == "fsdp2" or case.get("master_dtype") == "fp32") else bits16
    config = model_config(case["model"], case.get("flash", True), smoke)
    with torch.device(device), default_dtype(load_dtype):
        model = AutoModelForCausalLM.from_config(config)
    stats["params"] = sum(p.numel() for p in model.parameters())
    stats["load_dtype"] = str(next(model.parameters()).dtype)
    stats["host_after_build"] = host_memory()
    if case.get("checkpointing"):
        model.gradient_checkpointing_enable()
    if case.get("lora_rank"):
        from peft import LoraConfig, get_peft_model

        model.enable_input_require_grads()
        model = get_peft_model(model, LoraConfig(r=case["lora_rank"], lora_alpha=2 * case["lora_rank"],
                                                 target_modules="all-linear", task_type="CAUSAL_LM"))
        stats["trainable"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
        stats["adapter_dtype"] = str(next(p for p in model.parameters() if p.requires_grad).dtype)
        stats["peft"] = __import__("peft").__version__
    model.train()
    fused = case.get("optimizer") == "adamw_torch_fused"
    params = [p for p in model.parameters() if p.requires_grad]
    autocast = contextlib.nullcontext()
    engine = None
    if zero is not None:
        import deepspeed

        _init_single_rank(29500)
        deepspeed.init_distributed(dist_backend="nccl" if cuda else "gloo")
        optimizer = torch.optim.AdamW(params, lr=1e-5, fused=fused or None)
        zero_config = {"stage": zero}
        for part in ("optimizer", "param"):
            if case.get(f"offload_{part}"):
                zero_config[f"offload_{part}"] = {"device": case[f"offload_{part}"],
                                                  "pin_memory": case.get(f"offload_{part}_pin_memory", True)}
        ds_config = {"train_micro_batch_size_per_gpu": case["micro_batch"],
                     "gradient_accumulation_steps": case.get("grad_accum", 1),
                     case["dtype"]: {"enabled": True}, "zero_optimization": zero_config,
                     # torch's AdamW steps the offloaded fp32 partition on the CPU, as the HF Trainer's client
                     # optimizer would: no DeepSpeedCPUAdam to build, the same GPU memory
                     "zero_allow_untested_optimizer": True, "zero_force_ds_cpu_optimizer": False,
                     "steps_per_print": 10**9}
        engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=ds_config)
        stats["deepspeed"] = deepspeed.__version__
        stats["ds_optimizer"] = type(optimizer).__name__
        stats["host_after_engine"] = host_memory()
    else:
        if strategy == "fsdp2":
            import torch.distributed as dist
            from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard

            _init_single_rank(29501)
            dist.init_process_group("nccl" if cuda else "gloo")
            policy = MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=torch.float32)
            offload = CPUOffloadPolicy(pin_memory=True) if case.get("offload_param") == "cpu" else OffloadPolicy()
            for layer in model.model.layers:
                fully_shard(layer, mp_policy=policy, offload_policy=offload)
            fully_shard(model, mp_policy=policy, offload_policy=offload)
            # fully_shard registers new (sharded) parameters: the optimizer must take those, and the unsharded
            # originals must go (the 2026-11-28 Fs1 reading built it on the originals: no step, no Adam states)
            params = [p for p in model.parameters() if p.requires_grad]
            stats["host_after_engine"] = host_memory()
        else:
            autocast = torch.autocast(device, dtype=bf16)
        optimizer = torch.optim.AdamW(params, lr=1e-5, fused=fused or None)
    mark("build")
    vocab = config.vocab_size
    accumulate = case.get("grad_accum", 1)
    for step in range(steps):
        for micro in range(accumulate):
            ids = torch.randint(0, vocab, (case["micro_batch"], case["seq_len"]), device=device)
            with autocast:
                if case.get("fused_loss"):
                    loss = fused_loss(model, ids)
                else:
                    loss = (engine or model)(input_ids=ids, labels=ids, use_cache=False).loss
            if engine is not None:
                engine.backward(loss)
            else:
                loss.backward()
            del loss
            mark(f"train{step}.{micro}")
            if engine is not None:
                engine.step()  # DeepSpeed steps the optimizer at the accumulation boundary only
        if engine is None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        mark(f"step{step}")
    stats["peak_allocated_gib"] = peak["allocated"] / GIB
    stats["host_end"] = host_memory()
    stats["peak_reserved_gib"] = peak["reserved"] / GIB
    if cuda:
        free, total = torch.cuda.mem_get_info()
        stats["device_used_gib"] = (total - free) / GIB  # the whole process: context, reserved pool
        stats["reserved_now_gib"] = torch.cuda.memory_reserved() / GIB
        stats["device"] = torch.cuda.get_device_name(0)
        stats["device_total_gib"] = total / GIB
    stats["torch"], stats["transformers"] = torch.__version__, transformers.__version__
    return stats


def run_all(names: list[str], out: str, budget_s: float, case_timeout_s: float, smoke: bool) -> None:
    start = time.time()
    for name in names:
        left = budget_s - (time.time() - start)
        if left < 20:
            print(f"{name}: skipped, budget spent", flush=True)
            continue
        t0 = time.time()
        cmd = [sys.executable, os.path.abspath(__file__), "--case", name] + (["--smoke"] if smoke else [])
        try:
            env = dict(os.environ)
            if CASES[name].get("transformers_version"):
                site = os.path.join(SITES, "transformers-" + CASES[name]["transformers_version"])
                env["PYTHONPATH"] = os.pathsep.join(filter(None, [site, env.get("PYTHONPATH")]))
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=min(case_timeout_s, left), env=env)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            record = json.loads(lines[-1]) if proc.returncode == 0 and lines else {
                "error": f"exit {proc.returncode}", "stderr": proc.stderr[-3000:]}
        except subprocess.TimeoutExpired:
            record = {"error": "timeout"}
        record = {"id": name, "config": CASES[name], "seconds": round(time.time() - t0, 1)} | record
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        shown = record.get("peak_allocated_gib", record.get("error"))
        print(f"{name}: {shown} ({record['seconds']} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", help="run one case in this process and print its JSON")
    parser.add_argument("--only", help="comma-separated case ids (default: all, in table order)")
    parser.add_argument("--out", default="peaks.jsonl")
    parser.add_argument("--budget", type=float, default=420.0, help="seconds; no case starts after it")
    parser.add_argument("--case-timeout", type=float, default=120.0)
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU")
    args = parser.parse_args()
    if args.case:
        steps = 1 if args.case in ONE_STEP else STEPS
        print(json.dumps(run_case(CASES[args.case], smoke=args.smoke, steps=steps)), flush=True)
        return
    names = args.only.split(",") if args.only else list(CASES)
    run_all(names, args.out, args.budget, args.case_timeout, args.smoke)


if __name__ == "__main__":
    main()
