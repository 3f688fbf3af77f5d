"""The accuracy table of docs/accuracy.md ("Measured peaks"), reproduced with one command:

    python bench/calibrate.py            # the table (markdown) and its summary figures
    python bench/calibrate.py --check    # exit 1 when a verdict is wrong or an error leaves its bound

Every row is a public measurement with its source and the configuration it was taken under; the estimate is
computed here from that configuration (rlhf_lint.memory.estimate), never copied. Rows marked held out were not
looked at while the band factors (schemas/memory/constants.json band_factors) were chosen.
"""
from __future__ import annotations

import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 2**30

# (id, what was measured, source, configuration (estimate options), measured, unit, held out)
# unit: GiB (a GPU or host figure), "oom" / "fits" (a verdict)
ROWS = [
    ("G1", "vLLM's PyTorch allocations at gpu_memory_utilization 0.85 (\"PyTorch already holds 66.85 GiB\")",
     "https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/issues/24",
     {"example": "examples/case3_orz_1p5b", "quantity": "vllm_torch"}, 66.85, "GiB", False),
    ("G2", "memory outside vLLM's allocations at the weight sync (79.15 - 66.85 - 0.27 GiB free)",
     "https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/issues/24",
     {"example": "examples/case3_orz_1p5b", "quantity": "sync_outside"}, 79.15 - 66.85 - 278 / 1024, "GiB", False),
    ("G3", "verdict of that ORZ 1.5B PPO, 4 x A100-80GB, colocate_all, utilisation 0.85",
     "https://github.com/Open-Reasoner-Zero/Open-Reasoner-Zero/issues/24",
     {"example": "examples/case3_orz_1p5b", "quantity": "verdict"}, "oom", "verdict", False),
    ("G4", "verdict: Qwen1.5-7B actor + 1.8B reward PPO on 8 x RTX 4090, ZeRO-3, Adam on the CPU",
     "https://github.com/OpenRLHF/OpenRLHF/issues/407",
     {"example": "examples/case5_7b_4090", "quantity": "verdict"}, "fits", "verdict", False),
    ("G5", "host RAM of the actor processes with CPU Adam (13B, fp32 gradient accumulation), one node",
     "https://github.com/OpenRLHF/OpenRLHF/issues/171",
     {"model": "meta-llama/Llama-2-13b-hf", "gpus": 8, "zero": 3, "offload_optimizer": "cpu",
      "grad_accum_dtype": "fp32", "quantity": "host_states"}, 211e9 / GIB, "GiB", False),
    ("G6", "verdict: llama-7b full fine-tuning, 8 x V100-32GB, fp16, ZeRO-2 (OOM in the Adam step at 28.28 GiB "
           "allocated + 3.14 GiB requested)",
     "https://github.com/hiyouga/LlamaFactory/issues/1221",
     {"model": "huggyllama/llama-7b", "gpus": 8, "gpu": "V100-32GB", "zero": 2, "dtype": "fp16",
      "micro_batch": 1, "seq_len": 1024, "quantity": "verdict"}, "oom", "verdict", False),
    ("G7", "verdict: 70B QLoRA on one A100-40GB with ZeRO-2 and optimizer offload",
     "https://github.com/InternLM/xtuner/issues/88",
     {"model": "meta-llama/Llama-2-70b-hf", "gpus": 1, "gpu": "A100-40GB", "zero": 2, "offload_optimizer": "cpu",
      "lora_rank": 64, "quantization": "4bit", "micro_batch": 1, "seq_len": 2048, "checkpointing": True,
      "quantity": "verdict"}, "oom", "verdict", False),
    ("H1", "verdict: the same llama-7b run with ZeRO-3 (\"after switching to stage 3 it runs\")",
     "https://github.com/hiyouga/LlamaFactory/issues/1221",
     {"model": "huggyllama/llama-7b", "gpus": 8, "gpu": "V100-32GB", "zero": 3, "dtype": "fp16",
      "micro_batch": 1, "seq_len": 1024, "quantity": "verdict"}, "fits", "verdict", True),
    ("H2", "verdict: QLoRA paper, LLaMA-65B on a single 48 GB GPU (NF4, LoRA r 64 on every linear layer, paged "
           "AdamW, bf16 adapters, checkpointing, batch 1 x 528 tokens)",
     "https://arxiv.org/abs/2305.14314",
     {"model": "huggyllama/llama-65b", "gpus": 1, "gpu": "A6000", "strategy": "ddp", "master_dtype": "bf16",
      "lora_rank": 64, "quantization": "4bit", "optimizer": "paged_adamw_32bit", "micro_batch": 1, "seq_len": 528,
      "checkpointing": True, "quantity": "verdict"}, "fits", "verdict", True),
]


def _estimate_row(config: dict):
    from rlhf_lint.cli.estimate import _job_from_options
    from rlhf_lint.engine.config import Config, Hardware
    from rlhf_lint.memory.estimate import estimate

    if "example" in config:
        from rlhf_lint.engine.runner import build_project

        cfg = Config()
        project, _ = build_project([os.path.join(ROOT, config["example"])], cfg)
        job = next(j for j in project.jobs if j.framework in ("orz", "openrlhf"))
        hw = cfg.hardware.merged(Hardware.from_mapping(job.hardware)) if job.hardware else cfg.hardware

        def read(reference, job=job, project=project):
            found = project.resolve(job.path, reference.rstrip("/") + "/config.json")
            return found.text if found is not None else None

        return estimate(job, hw, read)
    extra = {"train.strategy": config.get("strategy"), "precision.master_dtype": config.get("master_dtype"),
             "train.lora_rank": config.get("lora_rank"), "train.quantization": config.get("quantization"),
             "train.optimizer": config.get("optimizer")}
    job = _job_from_options(config["model"], config["gpus"], None, config.get("zero"), config.get("offload_optimizer"),
                            None, config.get("dtype"), config.get("grad_accum_dtype"), config.get("micro_batch"),
                            config.get("seq_len"), config.get("checkpointing"), config.get("flash", True), "sft",
                            extra)
    return estimate(job, Hardware(gpu=config.get("gpu"), gpus_per_node=min(8, config["gpus"])))


def _verdict(est) -> str:
    groups = [g for g in est.groups if g.gpu_memory is not None]
    if any(g.certain_overflow for g in groups):
        return "oom"
    if any(g.tight for g in groups):
        return "tight"
    return "fits"


def measure(config: dict, est) -> float | str:
    quantity = config["quantity"]
    if quantity == "verdict":
        return _verdict(est)
    group = est.group_of("vllm") or est.groups[0]
    if quantity == "vllm_torch":
        return est.role("vllm").term("vllm_reservation") / GIB
    if quantity == "sync_outside":
        return sum(t.bytes for _, t in group.phases["weight-sync"] if t.name != "vllm_reservation") / GIB
    if quantity == "host_states":
        node = est.nodes[0]
        return sum(t.bytes for t in node.persistent if t.name.endswith(":policy") and not t.name.startswith("process"))\
            / GIB
    raise ValueError(quantity)


def rows() -> list[dict]:
    out = []
    for rid, what, source, config, published, unit, held in ROWS:
        est = _estimate_row(config)
        ours = measure(config, est)
        row = {"id": rid, "what": what, "source": source, "published": published, "ours": ours, "unit": unit,
               "held_out": held, "config": {k: v for k, v in config.items() if k != "quantity"}}
        if unit == "verdict":
            row["right"] = ours == published
            row["not_wrong"] = ours == published or ours == "tight"
        else:
            row["error"] = (ours - published) / published
            low = high = None
            for g in est.groups:
                low, high = g.low_peak, g.high_peak
            row["band"] = (low, high)
        out.append(row)
    return out


def summary(table: list[dict]) -> dict:
    def figures(items):
        errors = [abs(r["error"]) for r in items if "error" in r]
        verdicts = [r for r in items if r["unit"] == "verdict"]
        return {"rows": len(items), "median_abs_error": statistics.median(errors) if errors else None,
                "worst_abs_error": max(errors) if errors else None,
                "verdicts_right": sum(r["right"] for r in verdicts),
                "verdicts_tight": sum(r["ours"] == "tight" for r in verdicts),
                "verdicts_wrong": sum(not r["not_wrong"] for r in verdicts), "verdicts": len(verdicts)}

    return {"fitting": figures([r for r in table if not r["held_out"]]),
            "held_out": figures([r for r in table if r["held_out"]])}


def markdown(table: list[dict]) -> str:
    lines = ["| Row | Measured | Configuration | Published | Ours | Error | Source |", "|---|---|---|---|---|---|---|"]
    for r in table:
        config = ", ".join(f"{k}={v}" for k, v in r["config"].items())
        if r["unit"] == "verdict":
            pub, ours, err = r["published"], r["ours"], "right" if r["right"] else (
                "tight (warning)" if r["not_wrong"] else "WRONG")
        else:
            pub, ours, err = f"{r['published']:.2f} GiB", f"{r['ours']:.2f} GiB", f"{r['error']:+.1%}"
        lines.append(f"| {r['id']}{' (held out)' if r['held_out'] else ''} | {r['what']} | {config} | {pub} | {ours} "
                     f"| {err} | {r['source']} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    table = rows()
    figures = summary(table)
    print(markdown(table))
    print()
    for name, f in figures.items():
        med = "-" if f["median_abs_error"] is None else f"{f['median_abs_error']:.1%}"
        worst = "-" if f["worst_abs_error"] is None else f"{f['worst_abs_error']:.1%}"
        print(f"{name}: {f['rows']} rows; median |error| {med}, worst {worst}; verdicts {f['verdicts_right']} of "
              f"{f['verdicts']} right, {f['verdicts_tight']} tight, {f['verdicts_wrong']} wrong")
    if "--check" in argv:
        bad = [r["id"] for r in table if (r["unit"] == "verdict" and not r["not_wrong"])
               or (r["unit"] != "verdict" and abs(r["error"]) > 0.25)]
        if bad:
            print("out of bounds: " + ", ".join(bad), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
