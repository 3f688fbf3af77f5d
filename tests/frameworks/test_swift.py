"""ms-swift launches read as HF Trainer-family jobs (rlhf_lint.frameworks.swift); fixtures written for these tests."""
from __future__ import annotations

import pytest

from lintutil import build_written

from rlhf_lint.engine.config import Config, Hardware
from rlhf_lint.engine.project import Project, parse_source
from rlhf_lint.frameworks.launchers import commands_of, launch_topology
from rlhf_lint.memory.estimate import estimate
from rlhf_lint.readers.source import Source

A100 = Hardware(gpu="A100-80GB")
A10 = Hardware(gpu="A10")  # 24 GB


def _jobs(tmp_path, files: dict):
    return build_written(tmp_path, files).jobs


def _job(tmp_path, text: str, files: dict | None = None):
    jobs = _jobs(tmp_path, {"train.sh": text, **(files or {})})
    (job,) = [j for j in jobs if j.framework == "swift"]
    return job


def _top(text, gpus_per_node=None):
    src = Source.from_bytes("run.sh", text.encode(), kind="shell")
    parse_source(src)
    config = Config()
    config.hardware = Hardware(gpus_per_node=gpus_per_node)
    project = Project([src], config)
    return [launch_topology(c, src, project) for c in commands_of(src, project)]


def _counts(top):
    return tuple(None if s is None else s.value for s in (top.nodes, top.per_node, top.world))


def test_swift_cli_starts_torchrun_only_with_nproc_per_node_or_nnodes():
    one, torchrun, cont, nodes_only = _top(
        "CUDA_VISIBLE_DEVICES=0 swift sft --model Qwen/Qwen2.5-7B-Instruct\n"
        "NPROC_PER_NODE=4 CUDA_VISIBLE_DEVICES=0,1,2,3 swift sft --model Qwen/Qwen2.5-7B-Instruct\n"
        "export NNODES=2\nexport NPROC_PER_NODE=8\nswift rlhf \\\n  --rlhf_type dpo \\\n  --model m\n"
        "unset NPROC_PER_NODE\nNNODES=$WORLD_SIZE swift pt --model m\n", gpus_per_node=8)
    assert _counts(one) == (1, 1, 1)
    assert _counts(torchrun) == (1, 4, 4) and torchrun.visible.value == 4
    assert _counts(cont) == (2, 8, 16)
    # torchrun's default is one process per node, but the platform setting NNODES may set NPROC_PER_NODE too
    assert nodes_only.per_node is None and any("NPROC_PER_NODE" in n for n in nodes_only.notes)


def test_swift_commands_that_do_not_train_are_no_jobs(tmp_path):
    jobs = _jobs(tmp_path, {"run.sh": "CUDA_VISIBLE_DEVICES=0 swift infer --model Qwen/Qwen2.5-7B-Instruct\n"
                                      "swift deploy --model Qwen/Qwen2.5-7B-Instruct\nswift export --model m\n"})
    assert jobs == []


def test_arguments_map_to_settings_and_release_defaults_fill_the_rest(tmp_path):
    job = _job(tmp_path, "NPROC_PER_NODE=2 CUDA_VISIBLE_DEVICES=0,1 swift sft --model Qwen/Qwen2.5-7B-Instruct "
                         "--torch_dtype bfloat16 --lora_rank 16 --target_modules q_proj v_proj --max_length 4096 "
                         "--attn_impl eager --use_liger_kernel true\n",
               {"requirements.txt": "ms-swift==3.2.1\n"})
    v = job.value
    assert v("model.policy.path") == "Qwen/Qwen2.5-7B-Instruct" and v("job.type") == "sft"
    assert v("hf.torch_dtype") == "bf16" and v("hf.mixed_precision") == "bf16"
    assert v("train.lora_rank") == 16 and v("train.lora_targets") == ("q_proj", "v_proj")
    assert v("seq.max_len") == 4096 and v("seq.max_len_truncates") is True
    assert v("train.flash_attn") is False and v("train.fused_loss") is True
    # ms-swift's defaults at the pinned release (3.2.x): micro batch 1, gradient checkpointing on, DDP
    assert v("batch.micro_train") == 1 and v("train.gradient_checkpointing") is True
    assert "v3.2.2" in job.settings.get("batch.micro_train").origin
    assert v("train.strategy") == "ddp" and v("topology.world_size") == 2


def test_release_defaults_lora_and_the_newest_release_when_nothing_pins(tmp_path):
    job = _job(tmp_path, "CUDA_VISIBLE_DEVICES=0 swift sft --model Qwen/Qwen2.5-7B-Instruct\n")
    assert job.value("train.lora_rank") == 8 and job.value("train.lora_targets") == ("all-linear",)
    assert any("not pinned" in a for a in job.assumptions)
    # the torch_dtype left unset is the checkpoint's: open, 16 bits at the band's low end
    assert job.value("hf.torch_dtype") == "auto"
    old = _job(tmp_path / "old", "CUDA_VISIBLE_DEVICES=0 swift sft --model m --train_type full\n",
               {"requirements.txt": "ms-swift==3.9.0\n"})
    new = _job(tmp_path / "new", "CUDA_VISIBLE_DEVICES=0 swift sft --model m --tuner_type full\n")
    assert old.value("train.lora_rank") == 0 and new.value("train.lora_rank") == 0


def test_deepspeed_presets_and_a_config_path(tmp_path):
    job = _job(tmp_path, "NPROC_PER_NODE=8 swift sft --model Qwen/Qwen2.5-7B-Instruct --tuner_type full "
                         "--deepspeed zero3_offload\n")
    assert job.value("zero.stage") == 3 and job.value("offload.optimizer") == "cpu" \
        and job.value("offload.param") == "cpu"
    assert "zero3_offload.json" in job.settings.get("zero.stage").origin
    # the presets pin the offloaded buffers (the host estimate rounds their blocks up to powers of two)
    assert job.value("deepspeed.offload_optimizer_pin_memory") is True
    assert job.value("deepspeed.offload_param_pin_memory") is True
    two = _job(tmp_path / "b", "NPROC_PER_NODE=8 swift sft --model m --deepspeed zero2_offload\n")
    assert two.value("zero.stage") == 2 and two.value("offload.optimizer") == "cpu" \
        and two.value("offload.param") == "none"
    assert two.value("deepspeed.offload_optimizer_pin_memory") is True
    path = _job(tmp_path / "c", "NPROC_PER_NODE=8 swift sft --model m --deepspeed ds.json\n",
                {"ds.json": '{"zero_optimization": {"stage": 1}}\n'})
    assert path.value("zero.stage") == 1


def test_dpo_full_loads_a_reference_copy_and_lora_uses_the_disabled_adapter(tmp_path):
    full = _job(tmp_path / "f", "NPROC_PER_NODE=8 swift rlhf --rlhf_type dpo --model Qwen/Qwen2.5-7B-Instruct "
                                "--tuner_type full --torch_dtype bfloat16 --deepspeed zero3 --max_length 2048\n")
    lora = _job(tmp_path / "l", "NPROC_PER_NODE=8 swift rlhf --rlhf_type dpo --model Qwen/Qwen2.5-7B-Instruct "
                                "--torch_dtype bfloat16 --deepspeed zero3 --max_length 2048\n")
    orpo = _job(tmp_path / "o", "NPROC_PER_NODE=8 swift rlhf --rlhf_type orpo --model m --tuner_type full\n")
    assert full.value("job.type") == "dpo" and full.roles == ("policy", "ref")
    assert lora.roles == ("policy",) and any("adapter disabled" in a for a in lora.assumptions)
    assert orpo.roles == ("policy",)
    est_full, est_lora = estimate(full, A100), estimate(lora, A100)
    assert [r.role for r in est_full.roles] == ["policy", "ref"] and [r.role for r in est_lora.roles] == ["policy"]


def test_qlora_reads_quant_bits(tmp_path):
    job = _job(tmp_path, "CUDA_VISIBLE_DEVICES=0 swift sft --model Qwen/Qwen2.5-7B-Instruct --quant_bits 4 "
                         "--quant_method bnb --torch_dtype bfloat16 --max_length 2048\n")
    assert job.value("train.quantization") == "4bit" and job.value("train.lora_rank") == 8
    est = estimate(job, A10)
    assert est.unmodelled is None and est.groups[0].fits


def test_rl_trainers_get_no_figures(tmp_path):
    meg = _job(tmp_path / "m", "NPROC_PER_NODE=8 megatron rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B-Instruct\n")
    assert meg.value("train.strategy") == "megatron" and "GRPO" in estimate(meg, A100).unmodelled
    grpo = _job(tmp_path / "g", "NPROC_PER_NODE=8 swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B-Instruct "
                                "--use_vllm true --vllm_mode colocate\n")
    assert grpo.value("job.type") == "grpo" and "GRPO" in estimate(grpo, A100).unmodelled
    # a device_map split beside DeepSpeed: ms-swift refuses it, so nothing is sized
    split = _job(tmp_path / "s", "CUDA_VISIBLE_DEVICES=0,1 swift sft --model Qwen/Qwen2.5-7B-Instruct "
                                 "--deepspeed zero2\n")
    assert "device_map" in estimate(split, A100).unmodelled


def test_a_model_split_by_device_map_puts_a_share_of_the_layers_on_each_gpu(tmp_path):
    # one process seeing 2 GPUs (ms-swift is_mp): each holds half the layers and their states; the LM head's logits
    # and the recomputed layer are whole on the GPU that runs them
    flags = "swift sft --model Qwen/Qwen2.5-7B-Instruct --tuner_type lora --max_length 2048 --torch_dtype bfloat16\n"
    split = _job(tmp_path / "s", "CUDA_VISIBLE_DEVICES=0,1 " + flags)
    whole = _job(tmp_path / "w", "CUDA_VISIBLE_DEVICES=0 " + flags)
    assert split.value("topology.model_split") == 2 and whole.value("topology.model_split") is None
    s, w = estimate(split, A100).role("policy"), estimate(whole, A100).role("policy")
    assert s.term("weights") == w.term("weights") // 2 and s.term("optimizer_states") == w.term("optimizer_states") // 2
    assert s.term("logits") == w.term("logits") and 0 < s.term("activations") < w.term("activations")
    assert "device_map" in " ".join(t.formula for t in s.terms if t.name == "weights")


def test_lisa_and_galore_get_no_figures_rather_than_a_full_fine_tunes(tmp_path):
    # a full fine-tune's 7B states would overflow a 24 GB card: LISA and GaLore train otherwise, so no verdict
    for flags in ("--lisa_activated_layers 2", "--lisa_activated_layers $LAYERS", "--use_galore true"):
        job = _job(tmp_path / flags.split()[0].strip("-"), "CUDA_VISIBLE_DEVICES=0 swift sft --model "
                                                           f"Qwen/Qwen2.5-7B-Instruct --tuner_type full {flags}\n")
        assert estimate(job, A10).unmodelled, flags
    plain = _job(tmp_path / "off", "CUDA_VISIBLE_DEVICES=0 swift sft --model Qwen/Qwen2.5-7B-Instruct "
                                   "--tuner_type full --lisa_activated_layers 0\n")
    assert not estimate(plain, A10).unmodelled


def test_packing_bins_a_preference_pair_whole(tmp_path):
    # swift packs chosen + rejected as one sample of their summed length: a packed micro batch of 1 is one row of
    # max_length tokens, where unpacked it is two rows (chosen, rejected) of up to max_length each
    line = ("NPROC_PER_NODE=4 CUDA_VISIBLE_DEVICES=0,1,2,3 swift rlhf --rlhf_type dpo --model Qwen/Qwen2.5-7B-Instruct "
            "--tuner_type full --torch_dtype bfloat16 --deepspeed zero3 --max_length 8192{}\n")
    packed = estimate(_job(tmp_path / "p", line.format(" --packing true")), A100).role("policy")
    padded = estimate(_job(tmp_path / "u", line.format("")), A100).role("policy")
    assert packed.micro_tokens["training"][0] == 8192 and padded.micro_tokens["training"][0] == 2 * 8192


def test_swift_cli_script_under_accelerate_reads_the_json_accelerate_config(tmp_path):
    # `accelerate launch --config_file fsdp.json swift/cli/sft.py ...`: the CLI's own script, sharded by the FSDP
    # plugin of an accelerate config written as JSON
    config = ('{"compute_environment": "LOCAL_MACHINE", "distributed_type": "FSDP", "mixed_precision": "bf16", '
              '"num_processes": 2, "fsdp_config": {"fsdp_version": 2, "fsdp_activation_checkpointing": true}}')
    job = _job(tmp_path, "CUDA_VISIBLE_DEVICES=0,1 accelerate launch --config_file fsdp.json swift/cli/sft.py "
                         "--model Qwen/Qwen2.5-7B-Instruct --train_type lora --torch_dtype bfloat16 --max_length 2048\n",
               {"fsdp.json": config})
    assert job.value("job.type") == "sft" and job.value("train.strategy") in ("fsdp", "fsdp2")
    assert job.value("topology.world_size") == 2  # the JSON config's num_processes, not the hardware profile
    assert job.value("train.gradient_checkpointing") is True  # fsdp_activation_checkpointing
    policy = estimate(job, A100).role("policy")
    weights = {t.name: t for t in policy.terms}["weights"]
    assert "FSDP full shard" in weights.formula
    # LoRA: the frozen base has no gradients for FSDP to unshard
    assert "no gradients to unshard" in {t.name: t for t in policy.terms}["gathered_params"].formula


def _m001(tmp_path, text):
    from rlhf_lint.api import check

    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "train.sh").write_text("# rlhf-lint: hardware gpu=A10\n" + text)
    return [d for d in check([str(tmp_path)], select=["M001", "M009"])]


def test_overflow_with_certain_inputs_is_an_error_and_with_a_guessed_layout_a_warning(tmp_path):
    # full fine-tuning of a 7B model in bf16 on one 24 GB GPU: weights, gradients and AdamW states alone overflow
    certain = _m001(tmp_path / "a", "CUDA_VISIBLE_DEVICES=0 swift sft --model Qwen/Qwen2.5-7B-Instruct "
                                    "--tuner_type full --torch_dtype bfloat16 --max_length 1024\n")
    assert [(d.code, d.severity.name) for d in certain] == [("M001", "ERROR")]
    # no CUDA_VISIBLE_DEVICES: the one process may see several GPUs and split the model over them
    guessed = _m001(tmp_path / "b", "swift sft --model Qwen/Qwen2.5-7B-Instruct --tuner_type full "
                                    "--torch_dtype bfloat16 --max_length 1024\n")
    assert [(d.code, d.severity.name) for d in guessed] == [("M001", "WARNING")]


def test_a_length_that_only_truncates_is_never_an_error(tmp_path):
    # LoRA on a 7B model fits a 24 GB GPU at short lengths; 32k-token samples at the truncation bound would not
    found = _m001(tmp_path, "CUDA_VISIBLE_DEVICES=0 swift sft --model Qwen/Qwen2.5-7B-Instruct --torch_dtype "
                            "bfloat16 --max_length 32768 --per_device_train_batch_size 4\n")
    assert found and all(d.severity.name == "WARNING" for d in found)


ARGUMENT_FILES = {
    "cfg.yaml": ("model: Qwen/Qwen2.5-7B-Instruct\ntuner_type: full\ntorch_dtype: bfloat16\nmax_length: 2048\n"
                 "per_device_train_batch_size: 2\ndeepspeed: zero3\n"),
    # parse_yaml_args: json.load for a .json
    "cfg.json": ('{\n  "model": "Qwen/Qwen2.5-7B-Instruct",\n  "tuner_type": "full",\n  "torch_dtype": "bfloat16",\n'
                 '  "max_length": 2048,\n  "per_device_train_batch_size": 2,\n  "deepspeed": "zero3"\n}\n'),
}


@pytest.mark.parametrize("name", sorted(ARGUMENT_FILES))
def test_argument_file_keys_come_before_the_command_line(tmp_path, name):
    recipe = ARGUMENT_FILES[name]
    job = _job(tmp_path, f"NPROC_PER_NODE=4 swift sft {name} --per_device_train_batch_size 1\n", {name: recipe})
    assert job.value("model.policy.path") == "Qwen/Qwen2.5-7B-Instruct" and job.value("train.lora_rank") == 0
    assert job.value("zero.stage") == 3 and job.value("batch.micro_train") == 1  # the command line wins
    length = job.settings.get("seq.max_len")
    assert length.value == 2048 and length.path.endswith(name) and recipe[length.span.start:length.span.end] == "2048"
    # releases before 4.1 take no argument file
    old = _job(tmp_path / "old", f"NPROC_PER_NODE=4 swift sft {name}\n",
               {name: recipe, "requirements.txt": "ms-swift==3.8.1\n"})
    assert old.value("model.policy.path") is None and any("argument file" in a for a in old.assumptions)


def test_an_argument_files_env_sets_the_processes_the_launch_leaves_open(tmp_path):
    # parse_yaml_args exports ENV before get_torchrun_args reads NPROC_PER_NODE: a torchrun of 4 processes
    recipe = ("ENV:\n  NPROC_PER_NODE: 4\n  CUDA_VISIBLE_DEVICES: 0,1,2,3\n"
              "model: Qwen/Qwen2.5-7B-Instruct\ntuner_type: full\ndeepspeed: zero3\n")
    job = _job(tmp_path / "a", "swift sft cfg.yaml\n", {"cfg.yaml": recipe})
    nproc = job.settings.get("topology.gpus_per_node")
    assert (nproc.value, job.value("topology.world_size")) == (4, 4) and nproc.path.endswith("cfg.yaml")
    assert recipe[nproc.span.start:nproc.span.end] == "4" and job.value("topology.layout_guess") is None
    # the launch's own variable wins, as os.environ does in parse_yaml_args
    mine = _job(tmp_path / "b", "NPROC_PER_NODE=2 CUDA_VISIBLE_DEVICES=0,1 swift sft cfg.yaml\n", {"cfg.yaml": recipe})
    assert mine.value("topology.world_size") == 2
    # JSON too; before 4.1 there is no argument file, so no ENV
    as_json = ('{"ENV": {"NPROC_PER_NODE": 4}, "model": "Qwen/Qwen2.5-7B-Instruct", "tuner_type": "full"}\n')
    assert _job(tmp_path / "c", "swift sft cfg.json\n", {"cfg.json": as_json}).value("topology.world_size") == 4
    old = _job(tmp_path / "d", "swift sft cfg.yaml\n", {"cfg.yaml": recipe, "requirements.txt": "ms-swift==3.8.1\n"})
    assert old.value("topology.world_size") == 1


def test_an_argument_file_that_is_no_mapping_is_named_not_read(tmp_path):
    bad = _job(tmp_path, "NPROC_PER_NODE=4 swift sft cfg.json\n", {"cfg.json": "[1, 2]\n"})
    assert bad.value("model.policy.path") is None and any("not a mapping" in a for a in bad.assumptions)


def test_classification_and_embedding_heads_have_no_vocabulary_logits(tmp_path):
    text = ("NPROC_PER_NODE=2 swift sft --model Qwen/Qwen2.5-7B-Instruct --torch_dtype bfloat16 --max_length 2048 "
            "--per_device_train_batch_size 8")
    lm = _job(tmp_path / "lm", text + "\n")
    cls = _job(tmp_path / "cls", text + " --task_type seq_cls --num_labels 2\n")
    assert cls.value("model.lm_logits") is False

    def logits(job):
        return sum(t.bytes for t in estimate(job, A100).roles[0].terms if t.name == "logits")

    assert logits(cls) == 0 < logits(lm)


def test_release_row_takes_the_series_row_and_says_when_the_pin_is_outside_the_tables():
    from rlhf_lint.frameworks.swift import release_row, releases

    rows = sorted(releases(), key=lambda v: tuple(int(x) for x in v.split(".")))
    oldest, newest = rows[0], rows[-1]

    def row_for(version):
        config = Config()
        if version is not None:
            config.versions["ms-swift"] = version
        label, _, note = release_row(Project([], config))
        return label, note

    assert row_for("3.5.1") == ("3.5.3", None)  # the table's row of the same minor series
    label, note = row_for(None)
    assert label == newest and "not pinned" in note
    label, note = row_for("99.0")
    assert label == newest and "is newer than the releases" in note
    label, note = row_for("2.6.1")
    assert label == oldest and "is older than the releases" in note
    label, note = row_for("3.99.0")  # between two series the tables hold: the nearest older row
    assert label == "3.12.6" and "is not among the releases" in note
