"""The accuracy table of docs/accuracy.md ("Measured peaks"), reproduced with one command:

    python bench/calibrate.py            # the table (markdown) and its summary figures
    python bench/calibrate.py --check    # exit 1 when a verdict is wrong or an error leaves its bound
    python bench/calibrate.py --fit      # the fixed terms of schemas/memory/constants.json fitted on the rows
    python bench/calibrate.py --validate FILE   # each row of FILE well formed and estimable: "ok ID", no figures

Every row (bench/calibration/*.json) is a public measurement with its source and the configuration it was taken
under; the estimate is computed here from that configuration (rlhf_lint.memory.estimate), never copied. Rows
marked held out never enter the fit of the fixed terms (--fit, schemas/memory/constants.json).
"""
from __future__ import annotations

import json
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 2**30

CALIBRATION = os.path.join(ROOT, "bench", "calibration")


def load_rows(folder: str = CALIBRATION, skip: str | None = None) -> list[dict]:
    """Every row of every bench/calibration/*.json file (one file per kind of source) but ``skip``, in file order.

    A row: id, what was measured, source (URL), config (estimate options and the quantity compared), measured (GiB,
    or "oom" / "fits" for a verdict), unit ("GiB" or "verdict"), held_out (not looked at while fitting)."""
    out: list[dict] = []
    for name in sorted(os.listdir(folder)):
        full = os.path.join(folder, name)
        if name.endswith(".json") and (skip is None or os.path.abspath(full) != os.path.abspath(skip)):
            with open(full, encoding="utf-8") as fh:
                out.extend(json.load(fh))
    ids = [r["id"] for r in out]
    if len(ids) != len(set(ids)):
        raise ValueError("duplicate calibration row ids: " + ", ".join(sorted({i for i in ids if ids.count(i) > 1})))
    return out


ROWS = load_rows()


# a row's option -> the job setting it sets as it is; the options that need more are handled in
# _estimate_options_row, and OPTION_KEYS below is derived from these tables
SETTINGS = {"strategy": "train.strategy", "master_dtype": "precision.master_dtype",
            "adapter_dtype": "precision.adapter_dtype", "lora_rank": "train.lora_rank",
            "quantization": "train.quantization", "optimizer": "train.optimizer", "fused_loss": "train.fused_loss",
            "packing": "train.packing", "ring_attn_size": "train.ring_attn_size",
            "sequence_parallel_size": "train.sequence_parallel_size", "prompt_len": "seq.prompt_max_len",
            "completion_len": "seq.generate_max_len", "beta": "trl.beta",
            "offload_param_pin_memory": "deepspeed.offload_param_pin_memory",
            "offload_optimizer_pin_memory": "deepspeed.offload_optimizer_pin_memory",
            "vllm_utilization": "vllm.gpu_memory_utilization", "vllm_tp": "vllm.tensor_parallel_size",
            "vllm_max_num_seqs": "vllm.max_num_seqs", "vllm_max_num_batched_tokens": "vllm.max_num_batched_tokens"}
# the arguments of _job_from_options after model and GPUs, in order, with their defaults
JOB_ARGUMENTS = {"zero": None, "offload_optimizer": None, "offload_param": None, "dtype": None,
                 "grad_accum_dtype": None, "micro_batch": None, "seq_len": None, "checkpointing": None,
                 "flash": True, "job_type": "sft"}
HARDWARE = {"gpu": "gpu", "host_memory": "host-memory", "gpu_memory": "gpu-memory"}
OPTION_KEYS = {"model", "gpus", "framework", "lora_targets", "lora_modules_to_save", "grad_accum", "max_tokens_per_gpu",
               "ds_config"} \
    | set(SETTINGS) | set(JOB_ARGUMENTS) | set(HARDWARE)


def _estimate_options_row(config: dict):
    """A row given by `rlhf-lint estimate` options (the same mapping as the CLI)."""
    from rlhf_lint.cli.estimate import _job_from_options
    from rlhf_lint.engine.config import Hardware
    from rlhf_lint.memory.estimate import VERSIONED_PACKAGES, estimate

    extra = {setting: config.get(key) for key, setting in SETTINGS.items()}
    extra["vllm.num_engines"] = 1 if config.get("vllm_utilization") else None
    extra["train.lora_targets"] = tuple(config["lora_targets"].split(",")) if config.get("lora_targets") else None
    extra["train.lora_modules_to_save"] = (tuple(config["lora_modules_to_save"].split(","))
                                           if config.get("lora_modules_to_save") else None)
    if config.get("grad_accum"):
        extra["batch.grad_accum"] = config["grad_accum"]
    if config.get("max_tokens_per_gpu"):
        extra |= {"batch.dynamic": True, "batch.max_tokens_per_gpu": config["max_tokens_per_gpu"]}
    job = _job_from_options(config["model"], config["gpus"], None,
                            *(config.get(key, default) for key, default in JOB_ARGUMENTS.items()), extra,
                            config.get("framework"))
    if config.get("ds_config"):
        from rlhf_lint.cli.estimate import _add_ds_config

        _add_ds_config(job, os.path.join(ROOT, config["ds_config"]))  # as `estimate --ds-config FILE`: options win
    hw = Hardware.from_mapping({name: config.get(key) for key, name in HARDWARE.items()}
                               | {"gpus-per-node": min(8, config["gpus"])})
    versions = {k: config[f"{k}_version"] for k in VERSIONED_PACKAGES if config.get(f"{k}_version")} or None
    return estimate(job, hw, versions=versions)


def _estimate_example_row(example: str):
    """A row given by a launch in examples/ or bench/calibration/launches/, read as `rlhf-lint estimate PATH` reads
    it: the folder's first launch, the releases its pins name, the script's hardware comment."""
    from rlhf_lint.cli.estimate import launch_reader
    from rlhf_lint.engine.config import Config
    from rlhf_lint.engine.runner import build_project
    from rlhf_lint.frameworks.edge import target_versions
    from rlhf_lint.memory.estimate import VERSIONED_PACKAGES, estimate

    cfg = Config()
    project, _ = build_project([os.path.join(ROOT, example)], cfg)
    if not project.jobs:
        raise ValueError(f"no training launch found in {example}")
    # the launch, not an accelerate config it names (a config no launch of the folder names is a job too)
    job = next((j for j in project.jobs if j.framework != "accelerate"), project.jobs[0])
    return estimate(job, cfg.hardware_for(job.hardware), launch_reader(project, job),
                    versions=target_versions(project, VERSIONED_PACKAGES))


def _estimate_row(config: dict):
    if "model" in config:
        return _estimate_options_row(config)
    if "example" in config:
        return _estimate_example_row(config["example"])
    return None  # a row about one constant of the model (the CUDA context of a process without tensors)


def _verdict(est) -> str:
    groups = [g for g in est.groups if g.gpu_memory is not None]
    if not groups:
        return "no verdict"  # no estimate (a launch the reader does not take) or no card: never "fits"
    if any(g.certain_overflow for g in groups):
        return "oom"
    if any(g.tight for g in groups):
        return "tight"
    return "fits"


UNSEEN_BY_ALLOCATED = ("runtime", "allocator_slack")  # terms torch.cuda.max_memory_allocated does not see
GPU_PEAKS = ("peak", "peak_allocated", "peak_reserved")


def _gpu_peak(group, phase: str, quantity: str, end: int | None = None) -> int:
    """Bytes of one phase of a GPU group as a reading of ``quantity`` sees them: the nominal figure (end None) or
    an end of the band (0 low, 1 high)."""
    from rlhf_lint.memory.estimate import K

    items = group.phases[phase]
    if quantity == "peak_allocated":
        if end is None:
            return sum(t.bytes for _, t in items if t.name not in UNSEEN_BY_ALLOCATED)
        return group.band_total(phase, end, UNSEEN_BY_ALLOCATED)
    total = group.phase_total(phase) if end is None else group.band_total(phase, end)
    if quantity == "peak_reserved":
        # each runtime term holds one process's CUDA context, which max_memory_reserved does not see (the
        # allocator's slack it does)
        factor = 1.0 if end is None else K.band_factors.get("runtime", K.band_factors["other"])[end]
        total -= int(K.cuda_context * sum(t.name == "runtime" for _, t in items) * factor)
    return total


def band(config: dict, est) -> tuple[float, float] | None:
    """(low, high) GiB of the estimate's band for the quantity a GPU-peak row compares, None for other rows: the
    same group as ``measure``, the largest phase at each end."""
    if est is None or config["quantity"] not in GPU_PEAKS or not any(g.phases for g in est.groups):
        return None
    group = max((g for g in est.groups if g.phases), key=lambda g: g.peak)
    return tuple(max(_gpu_peak(group, p, config["quantity"], end) for p in group.phases) / GIB for end in (0, 1))


NO_FIGURE = "no figure"


def measure(config: dict, est) -> float | str:
    quantity = config["quantity"]
    if quantity == "verdict":
        return _verdict(est)
    if quantity == "cuda_context":
        from rlhf_lint.memory.estimate import K

        return K.cuda_context / GIB  # the runtime term of a process that holds no tensors
    if quantity in GPU_PEAKS:
        # the fullest GPU group's largest phase. "peak": what a device-level reading (nvidia-smi, NVML) sees, every
        # term with the CUDA context and allocator slack; "peak_allocated": torch.cuda.max_memory_allocated, which
        # sees neither; "peak_reserved": torch.cuda.max_memory_reserved, the slack without the context
        if not any(g.phases for g in est.groups):
            return NO_FIGURE  # a launch the estimate gives no figures (an unmodelled trainer or layout)
        group = max((g for g in est.groups if g.phases), key=lambda g: g.peak)
        return _gpu_peak(group, group.peak_phase, quantity) / GIB
    if quantity == "verl_lifetime_allocated":
        # verl's perf/max_memory_allocated_gb: torch.cuda.max_memory_allocated of a worker that also hosts the
        # rollout, never reset. vLLM's weights and KV cache are allocated through a memory pool of torch's allocator
        # and stay counted while vLLM sleeps, so the reading is vLLM's allocation plus the largest allocation of the
        # training process in any phase
        group = est.group_of("vllm")
        vllm = est.role("vllm").kv
        own = max(sum(t.bytes for role, t in items if role != "vllm" and t.name not in UNSEEN_BY_ALLOCATED)
                  for items in group.phases.values())
        return (own + vllm["weights_per_gpu"] + vllm["kv_bytes"]) / GIB
    if quantity == "host_node":
        return est.nodes[0].total / GIB
    if quantity == "host_verdict":
        return {True: "fits", False: "oom", None: "no verdict"}[est.nodes[0].fits]
    group = est.group_of("vllm") or est.groups[0]
    if quantity == "vllm_profile":  # vLLM's "PyTorch activation peak memory" of its profile run
        return est.role("vllm").kv["profile_peak"] / GIB
    if quantity == "vllm_kv":  # vLLM's "the rest of the memory reserved for KV Cache"
        return est.role("vllm").kv["kv_bytes"] / GIB
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
    for spec in ROWS:
        rid, what, source, config = spec["id"], spec["what"], spec["source"], spec["config"]
        published, unit, held = spec["measured"], spec["unit"], spec["held_out"]
        est = _estimate_row(config)
        ours = measure(config, est)
        row = {"id": rid, "what": what, "source": source, "published": published, "ours": ours, "unit": unit,
               "held_out": held, "quantity": config["quantity"],
               "config": {k: v for k, v in config.items() if k != "quantity"}}
        if unit == "verdict":
            row["right"] = ours == published
            row["not_wrong"] = ours == published or ours == "tight"
        elif ours != NO_FIGURE:
            row["error"] = (ours - published) / published
            row["band"] = band(config, est)
        out.append(row)
    return out


def summary(table: list[dict]) -> dict:
    def figures(items):
        errors = [abs(r["error"]) for r in items if "error" in r]
        verdicts = [r for r in items if r["unit"] == "verdict"]
        banded = [r for r in items if r.get("band")]
        return {"rows": len(items), "median_abs_error": statistics.median(errors) if errors else None,
                "worst_abs_error": max(errors) if errors else None,
                "verdicts_right": sum(r["right"] for r in verdicts),
                "verdicts_tight": sum(r["ours"] == "tight" for r in verdicts),
                "verdicts_wrong": sum(not r["not_wrong"] and r["ours"] != "no verdict" for r in verdicts),
                "verdicts_none": sum(r["ours"] == "no verdict" for r in verdicts), "verdicts": len(verdicts),
                "sizes_without_figure": sum(r["ours"] == NO_FIGURE for r in items),
                # a measured peak below the low end is where a "does not fit" error could have been false
                "bands": len(banded), "below_band": sum(r["published"] < r["band"][0] for r in banded),
                "above_band": sum(r["published"] > r["band"][1] for r in banded)}

    return {"fitting": figures([r for r in table if not r["held_out"]]),
            "held_out": figures([r for r in table if r["held_out"]])}


def markdown(table: list[dict]) -> str:
    lines = ["| Row | Measured | Configuration | Published | Ours | Error | Source |", "|---|---|---|---|---|---|---|"]
    for r in table:
        config = ", ".join(f"{k}={v}" for k, v in r["config"].items())
        if r["unit"] == "verdict":
            pub, ours, err = r["published"], r["ours"], "right" if r["right"] else (
                "tight (warning)" if r["not_wrong"] else "MISSED" if r["ours"] == "no verdict" else "WRONG")
        elif r["ours"] == NO_FIGURE:
            pub, ours, err = f"{r['published']:.2f} GiB", NO_FIGURE, "MISSED"
        else:
            pub, ours, err = f"{r['published']:.2f} GiB", f"{r['ours']:.2f} GiB", f"{r['error']:+.1%}"
            if r.get("band"):
                ours += f" (band {r['band'][0]:.2f}-{r['band'][1]:.2f})"
        lines.append(f"| {r['id']}{' (held out)' if r['held_out'] else ''} | {r['what']} | {config} | {pub} | {ours} "
                     f"| {err} | {r['source']} |")
    return "\n".join(lines)


# the fixed terms fitted on the rows (schemas/memory/constants.json), each on a grid within physical bounds:
# CUDA context per process (GiB; the HF docs measure 1.3 GB for the context and kernels of one process), allocator
# slack as a fraction of the transient tensors (activations, logits, gathered parameters, the step's copies), the
# share of the per-layer activation count (ModelArch.layer_activation_bytes) held at once (1.0: every saved tensor).
# The loss's bytes per logit are measured (bench/measure_peaks.py), no longer fitted
FIT_GRID = {"cuda_context": [0.5, 0.75, 1.0, 1.25, 1.5],
            "allocator_fragmentation": [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3],
            "activation_scale": [0.75, 0.8, 0.84, 0.88, 0.92, 0.96, 1.0]}


def fit() -> tuple[dict, float]:
    """Grid search: the values minimising the mean |relative error| of the fitting rows (held-out rows never
    enter), among those that leave the fewest fitting verdicts wrong: no verdict may go wrong that is right or
    tight at the values in use; one wrong there may stay wrong (it is reported) when no grid point mends it."""
    values, score, _ = fit_with_wrong()
    return values, score


def fit_with_wrong() -> tuple[dict, float, list[str]]:
    """fit(), also returning the ids of the fitting verdicts that stay wrong at the chosen values. Each source (URL)
    weighs the same: the mean of its rows' errors, so a table of twelve rows from one README does not outvote a
    single issue's figure. Returns (values, that score, the wrong ids)."""
    import itertools

    from rlhf_lint.memory.estimate import constants

    table = constants()
    saved = {name: table[name]["value"] for name in FIT_GRID}
    specs = [r for r in ROWS if not r["held_out"]]
    best: tuple[int, float, dict, list[str]] | None = None
    wrong_now = {r["id"] for r in specs if r["unit"] == "verdict"
                 and measure(r["config"], _estimate_row(r["config"])) not in (r["measured"], "tight")}
    try:
        for values in itertools.product(*FIT_GRID.values()):
            trial = dict(zip(FIT_GRID, values))
            for name, value in trial.items():
                table[name]["value"] = value
            errors: dict[str, list[float]] = {}
            wrong: list[str] = []
            for spec in specs:
                ours = measure(spec["config"], _estimate_row(spec["config"]))
                if spec["unit"] == "verdict":
                    if ours != spec["measured"] and ours != "tight":
                        wrong.append(spec["id"])
                else:
                    errors.setdefault(spec["source"], []).append(abs(ours - spec["measured"]) / spec["measured"])
            score = statistics.fmean(statistics.fmean(e) for e in errors.values())
            if set(wrong) <= wrong_now and (best is None or (len(wrong), score) < best[:2]):
                best = (len(wrong), score, trial, wrong)
    finally:
        for name, value in saved.items():
            table[name]["value"] = value
    if best is None:
        raise SystemExit("every grid point turns a right or tight fitting verdict wrong")
    return best[2], best[1], best[3]


QUANTITIES = {"peak": "GiB", "peak_allocated": "GiB", "peak_reserved": "GiB", "verdict": "verdict",
              "cuda_context": "GiB", "host_node": "GiB", "host_verdict": "verdict", "vllm_profile": "GiB",
              "vllm_kv": "GiB", "vllm_torch": "GiB", "sync_outside": "GiB", "host_states": "GiB",
              "verl_lifetime_allocated": "GiB"}
ROW_KEYS = {"id", "what", "source", "config", "measured", "unit", "held_out"}
def config_keys() -> set[str]:
    """What a row's config may hold: the options the estimate reads, a launch (example), the quantity and the
    releases (a misspelt key would otherwise be ignored without a word)."""
    from rlhf_lint.memory.estimate import VERSIONED_PACKAGES

    return OPTION_KEYS | {"example", "quantity"} | {f"{name}_version" for name in VERSIONED_PACKAGES}


def _own_reading(source: str) -> bool:
    """A peak this repository measured: "bench/measure_peaks.py --case ID (reading: FILE)", FILE a JSON-lines file
    of bench/calibration/device/ that holds case ID."""
    found = re.fullmatch(r"bench/measure_peaks\.py --case (\w+) \(reading: (bench/calibration/device/[\w.-]+\.jsonl)\)",
                         source)
    if not found or not os.path.isfile(os.path.join(ROOT, found[2])):
        return False
    with open(os.path.join(ROOT, found[2]), encoding="utf-8") as fh:
        return any(json.loads(line).get("id") == found[1] for line in fh if line.strip())


def _check_row(spec: dict, others: list[dict], earlier: list[dict]) -> None:
    """Raise ValueError when a row is malformed: its keys, unit and measured value against its quantity, the card a
    verdict needs, an id used before, a source already used by the other files (new rows need new sources)."""
    if set(spec) != ROW_KEYS:
        raise ValueError(f"keys {sorted(set(spec) ^ ROW_KEYS)} missing or unknown")
    config, quantity = spec["config"], spec["config"].get("quantity")
    if set(config) - config_keys():
        raise ValueError(f"unknown config keys {sorted(set(config) - config_keys())}")
    if quantity not in QUANTITIES:
        raise ValueError(f"unknown quantity {quantity!r}")
    if spec["unit"] != QUANTITIES[quantity]:
        raise ValueError(f"unit {spec['unit']!r} does not go with quantity {quantity!r}")
    if spec["unit"] == "verdict" and spec["measured"] not in ("oom", "fits"):
        raise ValueError("a verdict is measured as 'oom' or 'fits'")
    if spec["unit"] == "GiB" and not (isinstance(spec["measured"], (int, float)) and spec["measured"] > 0):
        raise ValueError("a size is measured as a positive number of GiB")
    if quantity == "verdict" and not (config.get("gpu") or config.get("gpu_memory")):
        raise ValueError("a GPU verdict needs the card (gpu or gpu_memory)")
    if quantity == "host_verdict" and not config.get("host_memory"):
        raise ValueError("a host RAM verdict needs host_memory")
    if not isinstance(spec["held_out"], bool):
        raise ValueError("held_out is true or false")
    if not str(spec["source"]).startswith("https://") and not _own_reading(str(spec["source"])):
        raise ValueError("source is a URL, or bench/measure_peaks.py with its reading in bench/calibration/device")
    if any(o["id"] == spec["id"] for o in others + earlier):
        raise ValueError(f"id {spec['id']} already used in bench/calibration")
    if any(o["source"] == spec["source"] for o in others):
        raise ValueError("source already used by another calibration file")


def validate(path: str, out=sys.stdout) -> int:
    """Check each row of a calibration file without showing its estimate (rows collected as held out stay unseen):
    the row's form (_check_row), then its estimate built and its quantity measured, the figure discarded. Prints
    "ok ID" or "ID: the exception" per row; returns the number of bad rows."""
    with open(path, encoding="utf-8") as fh:
        specs = json.load(fh)
    others = load_rows(skip=path)  # the rows of every other calibration file
    bad = 0
    for i, spec in enumerate(specs):
        rid = spec.get("id", f"row {i + 1}") if isinstance(spec, dict) else f"row {i + 1}"
        try:
            if not isinstance(spec, dict):
                raise ValueError("a row is a JSON object")
            _check_row(spec, others, specs[:i])
            measure(spec["config"], _estimate_row(spec["config"]))  # the figure is not shown
        except Exception as exc:  # noqa: BLE001 - every failure is the row's report
            bad += 1
            print(f"{rid}: {type(exc).__name__}: {exc}", file=out)
        else:
            print(f"ok {rid}", file=out)
    return bad


def main(argv: list[str]) -> int:
    if "--validate" in argv:
        at = argv.index("--validate")
        if at + 1 >= len(argv):
            print("usage: calibrate.py --validate FILE", file=sys.stderr)
            return 2
        return 1 if validate(argv[at + 1]) else 0
    if "--fit" in argv:
        values, score, wrong = fit_with_wrong()
        fitting = [r for r in ROWS if not r["held_out"]]
        print(f"fitted on {len(fitting)} rows ({sum(r['unit'] != 'verdict' for r in fitting)} sizes, "
              f"{sum(r['unit'] == 'verdict' for r in fitting)} verdicts); mean over sources of mean |error| "
              f"{score:.1%}")
        for name, value in values.items():
            print(f"  {name} = {value:g}")
        if wrong:
            print("  wrong at every grid point: " + ", ".join(wrong))
        return 0
    table = rows()
    figures = summary(table)
    print(markdown(table))
    print()
    for name, f in figures.items():
        med = "-" if f["median_abs_error"] is None else f"{f['median_abs_error']:.1%}"
        worst = "-" if f["worst_abs_error"] is None else f"{f['worst_abs_error']:.1%}"
        print(f"{name}: {f['rows']} rows; median |error| {med}, worst {worst}; verdicts {f['verdicts_right']} of "
              f"{f['verdicts']} right, {f['verdicts_tight']} tight, {f['verdicts_wrong']} wrong, "
              f"{f['verdicts_none']} without a verdict; {f['sizes_without_figure']} sizes without a figure; GPU peaks "
              f"{f['bands'] - f['below_band'] - f['above_band']} of {f['bands']} inside their band, "
              f"{f['above_band']} above, {f['below_band']} below")
    if "--check" in argv:
        bad = [r["id"] for r in table if (r["unit"] == "verdict" and not r["not_wrong"])
               or (r["unit"] != "verdict" and abs(r.get("error", 1.0)) > 0.25)]
        if bad:
            print("out of bounds: " + ", ".join(bad), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
