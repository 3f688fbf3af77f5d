"""One test per row of docs/launch-model.md: how each launcher sets world size, nodes and GPUs per node, and what
the hardware profile fills (rlhf_lint.frameworks.launchers.launch_topology)."""
from __future__ import annotations

import textwrap

import pytest

from rlhf_lint.engine.config import Config, Hardware
from rlhf_lint.engine.project import Project, parse_source
from rlhf_lint.frameworks.launchers import FILLED, build_shell_jobs, commands_of, gpu_demand, launch_topology
from rlhf_lint.model import UNKNOWN
from rlhf_lint.readers.source import Source


def _source(text, path="run.sh", kind="shell"):
    src = Source.from_bytes(path, textwrap.dedent(text).encode(), kind=kind)
    parse_source(src)
    return src


def _top(text, gpus_per_node=None, nodes=None, others=()):
    src = _source(text)
    config = Config()
    config.hardware = Hardware(gpus_per_node=gpus_per_node, nodes=nodes)
    project = Project([src, *others], config)
    return src, [launch_topology(c, src, project) for c in commands_of(src, project)]


def _counts(top):
    return tuple(None if s is None else s.value for s in (top.nodes, top.per_node, top.world))


def test_deepspeed_num_gpus_and_num_nodes():
    src, (top,) = _top("deepspeed --num_nodes 1 --num_gpus 4 train.py\n", gpus_per_node=8)
    assert _counts(top) == (1, 4, 4)
    assert src.span_text(top.per_node.span) == "4" and top.per_node.origin == "--num_gpus"


def test_deepspeed_include_names_devices():
    src, (top,) = _top("deepspeed --include localhost:4,5,6,7 train.py\n")
    assert _counts(top) == (1, 4, 4) and top.devices.value == (4, 5, 6, 7)
    assert src.span_text(top.devices.span) == "localhost:4,5,6,7"


def test_deepspeed_exclude_leaves_the_rest_of_the_profile():
    _, (top,) = _top("deepspeed --exclude localhost:0,1 train.py\n", gpus_per_node=8)
    assert _counts(top) == (1, 6, 6) and top.per_node.origin.startswith(FILLED)


def test_bare_deepspeed_is_filled_by_the_profile_and_says_so():
    _, (top,) = _top("deepspeed train.py\n", gpus_per_node=8)
    assert _counts(top) == (1, 8, 8)
    assert top.per_node.origin.startswith(FILLED) and "every GPU of the node" in top.per_node.origin
    assert FILLED in top.world.origin
    _, (unknown,) = _top("deepspeed train.py\n")
    assert unknown.per_node is None and unknown.world is None and any("gpus-per-node" in n for n in unknown.notes)


def test_deepspeed_hostfile_slots(tmp_path):
    hosts = Source.from_bytes("hostfile", b"# two workers\nworker-1 slots=8\nworker-2 slots=8\n", kind="text")
    _, (top,) = _top("deepspeed --hostfile hostfile train.py\n", others=(hosts,))
    assert _counts(top) == (2, 8, 16) and top.per_node.origin == "slots= of the hostfile"


def test_deepspeed_hostfile_not_checked_is_left_to_the_profile():
    _, (top,) = _top("deepspeed --hostfile /job/hostfile train.py\n", gpus_per_node=8, nodes=2)
    assert _counts(top) == (2, 8, 16) and top.nodes.origin.startswith(FILLED)


@pytest.mark.parametrize("text", [
    "export CUDA_VISIBLE_DEVICES=4,5\ndeepspeed train.py\n",
    "CUDA_VISIBLE_DEVICES=4,5\nexport CUDA_VISIBLE_DEVICES\ndeepspeed train.py\n",
    "CUDA_VISIBLE_DEVICES=4,5 deepspeed train.py\n",
    "env CUDA_VISIBLE_DEVICES=4,5 deepspeed train.py\n",
])
def test_cuda_visible_devices_becomes_deepspeeds_include(text):
    src, (top,) = _top(text, gpus_per_node=8)
    assert _counts(top) == (1, 2, 2) and top.devices.value == (4, 5)
    assert src.span_text(top.per_node.span) == "4,5"


def test_a_variable_not_exported_does_not_reach_the_launch():
    _, (top,) = _top("CUDA_VISIBLE_DEVICES=4,5\ndeepspeed train.py\n", gpus_per_node=8)
    assert _counts(top) == (1, 8, 8) and top.devices is None


def test_deepspeed_ignores_cuda_visible_devices_beside_num_gpus():
    _, (top,) = _top("CUDA_VISIBLE_DEVICES=0,1 deepspeed --num_gpus 4 train.py\n")
    assert _counts(top) == (1, 4, 4) and top.devices is None and top.visible is None
    assert any("ignores CUDA_VISIBLE_DEVICES" in n for n in top.notes)


def test_torchrun_nproc_and_nnodes_and_default():
    _, (top, default, module) = _top("torchrun --nnodes 2 --nproc_per_node 8 t.py\ntorchrun t.py\n"
                                     "python -m torch.distributed.run --nproc-per-node=4 t.py\n")
    assert _counts(top) == (2, 8, 16)
    assert _counts(default) == (1, 1, 1) and default.per_node.origin == "torchrun default --nproc_per_node 1"
    assert _counts(module) == (1, 4, 4)


@pytest.mark.parametrize("nproc", ["gpu", "auto"])
def test_torchrun_nproc_gpu_counts_visible_gpus(nproc):
    _, (top,) = _top(f"torchrun --nproc_per_node {nproc} t.py\n", gpus_per_node=8)
    assert _counts(top) == (1, 8, 8) and top.per_node.origin.startswith(FILLED)
    _, (cvd,) = _top(f"CUDA_VISIBLE_DEVICES=0,1,2 torchrun --nproc_per_node {nproc} t.py\n", gpus_per_node=8)
    assert _counts(cvd) == (1, 3, 3) and cvd.visible.value == 3


def test_torchrun_elastic_node_range_leaves_world_size_unknown():
    _, (ranged, fixed) = _top("torchrun --nnodes 1:4 --nproc_per_node 8 t.py\n"
                              "torchrun --nnodes 2:2 --nproc_per_node 8 t.py\n")
    assert ranged.nodes.value is UNKNOWN and ranged.world is None
    assert _counts(fixed) == (2, 8, 16)


def test_accelerate_flags_multi_gpu_and_gpu_ids():
    _, (flags, multi, ids) = _top("accelerate launch --num_processes 16 --num_machines 2 t.py\n"
                                  "accelerate launch --multi_gpu t.py\n"
                                  "accelerate launch --num_processes 2 --gpu_ids 6,7 t.py\n", gpus_per_node=8)
    assert _counts(flags) == (2, 8, 16)
    assert _counts(multi) == (1, 8, 8) and multi.per_node.origin.startswith(FILLED)
    assert _counts(ids) == (1, 2, 2) and ids.devices.value == (6, 7) and ids.visible.value == 2


def test_accelerate_config_yaml_fills_what_the_flags_leave():
    acc = _source("num_processes: 8\nnum_machines: 2\ndistributed_type: MULTI_GPU\n", path="acc.yaml", kind="yaml")
    _, (top, flag) = _top("accelerate launch --config_file acc.yaml t.py\n"
                          "accelerate launch --config_file acc.yaml --num_processes 4 t.py\n", others=(acc,))
    assert _counts(top) == (2, 4, 8) and top.world.origin == "num_processes in acc.yaml"
    assert flag.world.value == 4 and flag.nodes.value == 2


def test_accelerate_config_json_fills_the_counts_too():
    # accelerate's load_config_from_file takes .json as well as .yaml (ms-swift ships its FSDP configs as JSON)
    acc = _source('{"compute_environment": "LOCAL_MACHINE", "distributed_type": "FSDP", "num_processes": 2}',
                  path="fsdp2.json", kind="json")
    src, (top,) = _top("accelerate launch --config_file fsdp2.json t.py\n", gpus_per_node=8, others=(acc,))
    assert _counts(top) == (1, 2, 2) and top.world.origin == "num_processes in fsdp2.json"
    assert acc.span_text(top.world.span) == "2"


def test_an_unread_accelerate_config_takes_the_visible_gpus_before_the_hardware_profile():
    # the config is not among the files checked: its num_processes is unknown, but a process past the GPUs
    # CUDA_VISIBLE_DEVICES lists has no device of its own
    src, (visible, plain) = _top("CUDA_VISIBLE_DEVICES=0,1 accelerate launch --config_file gone.json t.py\n"
                                 "accelerate launch --config_file gone.json t.py\n", gpus_per_node=8)
    assert _counts(visible) == (1, 2, 2) and src.span_text(visible.per_node.span) == "0,1"
    assert any("num_processes of gone.json not known" in n for n in visible.notes)
    # without CUDA_VISIBLE_DEVICES the launch says nothing: the hardware profile decides later, named as a guess
    assert _counts(plain) == (None, None, None)


def test_a_flag_whose_value_is_a_command_substitution_is_still_that_flag():
    # `--nproc_per_node=$(nvidia-smi -L | wc -l)`: the word's value is unknown, its flag is not; read as torchrun's
    # default of one process, the launch got a false "does not fit" on one GPU
    src, (eq, spaced) = _top("torchrun --nproc_per_node=$(nvidia-smi -L | wc -l) train.py --bf16\n"
                             "deepspeed --num_gpus=`nvidia-smi -L | wc -l` --master_port=29500 train.py\n",
                             gpus_per_node=8)
    assert eq.per_node.value is UNKNOWN and eq.world is None
    assert src.span_text(eq.per_node.span) == "$(nvidia-smi -L | wc -l)"
    assert spaced.per_node.value is UNKNOWN
    project = Project([src], Config())
    first, second = commands_of(src, project)
    assert first.entry.text == "train.py" and [a.flag for a in first.args] == ["--bf16"]
    assert [a.flag for a in first.launcher_args] == ["--nproc_per_node"]
    assert src.span_text(first.launcher_args[0].flag_span) == "--nproc_per_node"
    assert second.entry.text == "train.py" and [a.flag for a in second.launcher_args] == ["--num_gpus", "--master_port"]
    # quoted whole, the flag's span starts after the quote
    src, (quoted,) = _top('torchrun "--nproc_per_node=$NGPU" train.py\n', gpus_per_node=8)
    assert quoted.per_node.value is UNKNOWN
    (command,) = commands_of(src, Project([src], Config()))
    assert src.span_text(command.launcher_args[0].flag_span) == "--nproc_per_node" and command.entry.text == "train.py"


def test_eval_of_a_command_string_is_that_launch():
    # DeepSpeedExamples' run_cmd="... deepspeed ..."; eval ${run_cmd}: the words of the string, assignments first
    src, (top,) = _top('run_cmd="NCCL_DEBUG=INFO CUDA_VISIBLE_DEVICES=0,1 deepspeed train.py --deepspeed ds.json"\n'
                       "eval ${run_cmd}\n", gpus_per_node=8)
    assert _counts(top) == (1, 2, 2)
    (command,) = commands_of(src, Project([src], Config()))
    assert (command.launcher, command.entry.text) == ("deepspeed", "train.py")
    assert [a.flag for a in command.args] == ["--deepspeed"]


@pytest.mark.parametrize("text, launcher, entry", [
    ("uv run --isolated --extra fsdp -m verl.trainer.main_ppo trainer.n_gpus_per_node=4", "python",
     "verl.trainer.main_ppo"),
    ("uv run python -m openrlhf.cli.train_sft --pretrain m", "python", "openrlhf.cli.train_sft"),
    ("uv run --with deepspeed torchrun --nproc_per_node 4 train.py --deepspeed ds.json", "torchrun", "train.py"),
    ("uv run -m torch.distributed.run --nproc_per_node 4 train.py", "torchrun", "train.py"),
    ("conda run -n rl --no-capture-output deepspeed --num_gpus 4 train.py", "deepspeed", "train.py"),
    ("poetry run accelerate launch --num_processes 4 train.py", "accelerate", "train.py"),
    ("pixi run -e cuda python -m openrlhf.cli.train_dpo --pretrain m", "python", "openrlhf.cli.train_dpo"),
])
def test_environment_runners_run_the_launch_they_name(text, launcher, entry):
    # `uv run`, `conda run`, `poetry run`, `pixi run`: the launch inside, their own options skipped
    src = _source(text + "\n")
    (command,) = commands_of(src, Project([src], Config()))
    assert (command.launcher, command.entry.text) == (launcher, entry)


def test_a_verl_launch_under_uv_run_is_a_verl_job():
    (job,) = _job("uv run --isolated -m verl.trainer.main_ppo trainer.n_gpus_per_node=4 trainer.nnodes=1\n")
    assert job.framework == "verl" and job.value("topology.world_size") == 4


def test_a_bash_c_string_built_from_variables_is_parsed_as_the_child_shell_parses_it():
    # open-r1's slurm/train.slurm: srun bash -c "$LAUNCHER $CMD", LAUNCHER starting with NAME=value assignments
    src, (top,) = _top('LAUNCHER="ACCELERATE_LOG_LEVEL=info accelerate launch --num_machines 2 --num_processes 16"\n'
                       'CMD="src/open_r1/sft.py --config recipe.yaml"\n'
                       'srun --nodes=2 --ntasks=2 bash -c "$LAUNCHER $CMD"\n')
    assert _counts(top) == (2, 8, 16)
    commands = commands_of(src, Project([src], Config()))
    assert [(c.launcher, c.entry.text) for c in commands] == [("accelerate", "src/open_r1/sft.py")]


def test_srun_tasks_and_sbatch_allocation():
    src, (plain, wrapped) = _top("#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --gpus-per-node=8\n"
                                 "srun --ntasks-per-node 8 python train.py\n"
                                 "srun torchrun --nnodes $SLURM_NNODES --nproc_per_node 8 train.py\n")
    assert _counts(plain) == (4, 8, 32) and plain.nodes.origin == "the SLURM allocation (--nodes)"
    assert _counts(wrapped) == (4, 8, 32) and "$SLURM_NNODES = 4" in wrapped.nodes.origin
    assert src.span_text(wrapped.nodes.span) == "$SLURM_NNODES"


def test_the_slurm_allocations_gpus_are_the_visible_ones():
    # SLURM sets CUDA_VISIBLE_DEVICES to the GPUs --gres / --gpus-per-node allocates: `deepspeed` and `accelerate
    # launch --multi_gpu` use those, not every GPU the hardware profile gives the node
    head = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:a100:4\n"
    src, (bare, multi, torch) = _top(head + "deepspeed train.py --deepspeed ds.json\n"
                                            "accelerate launch --multi_gpu train.py\n"
                                            "torchrun --nproc_per_node 8 train.py\n", gpus_per_node=8)
    assert _counts(bare) == (1, 4, 4) and not bare.per_node.filled
    assert src.span_text(bare.per_node.span) == "gpu:a100:4"
    assert _counts(multi) == (1, 4, 4)
    assert torch.per_node.value == 8 and torch.visible.value == 4  # more processes than GPUs: M010's to report
    _, (typed,) = _top("#!/bin/bash\n#SBATCH --gpus-per-node=h100:2\ndeepspeed train.py\n", gpus_per_node=8)
    assert typed.per_node.value == 2
    # $SLURM_GPUS_ON_NODE is the allocation's count from --gres too; $SLURM_GPUS_PER_NODE only from --gpus-per-node
    _, (on_node, per_node) = _top("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:8\n"
                                  "srun torchrun --nnodes $SLURM_NNODES --nproc_per_node $SLURM_GPUS_ON_NODE t.py\n"
                                  "srun torchrun --nnodes $SLURM_NNODES --nproc_per_node $SLURM_GPUS_PER_NODE t.py\n")
    assert _counts(on_node) == (2, 8, 16) and on_node.per_node.origin == "$SLURM_GPUS_ON_NODE = 8 from `--gres`"
    assert per_node.per_node.value is UNKNOWN


def test_python_in_a_batch_script_without_srun_is_one_process():
    _, (top,) = _top("#!/bin/bash\n#SBATCH --nodes=4\npython train.py\n")
    assert _counts(top) == (None, None, None)


def _job(text, gpus_per_node=None, nodes=None):
    src = _source(text)
    config = Config()
    config.hardware = Hardware(gpus_per_node=gpus_per_node, nodes=nodes)
    return build_shell_jobs(src, Project([src], config))


RAY = ("ray job submit -- python3 -m openrlhf.cli.train_ppo_ray --pretrain m --reward_pretrain r "
       "--actor_num_nodes 1 --actor_num_gpus_per_node 4 --ref_num_nodes 1 --ref_num_gpus_per_node 4 "
       "--critic_num_nodes 1 --critic_num_gpus_per_node 2 --reward_num_nodes 1 --reward_num_gpus_per_node 2 "
       "--vllm_num_engines 2 --vllm_tensor_parallel_size 2 {extra}\n")


@pytest.mark.parametrize("extra, total", [
    ("", 4 + 4 + 2 + 2 + 4),
    ("--colocate_actor_ref", 4 + 2 + 2 + 4),
    ("--colocate_actor_ref --colocate_critic_reward", 4 + 2 + 4),
    ("--colocate_all_models", 4),
])
def test_openrlhf_ray_demand_counts_placement_groups(extra, total):
    (job,) = _job(RAY.format(extra=extra))
    demand = gpu_demand(job)
    assert demand.ray and demand.total == total, demand.parts


def test_verl_demand_is_per_node():
    (job,) = _job("python3 -m verl.trainer.main_ppo trainer.nnodes=2 trainer.n_gpus_per_node=8\n")
    demand = gpu_demand(job)
    assert not demand.ray and demand.per_node.value == 8 and demand.total == 16
    assert job.value("topology.world_size") == 16


# -- TRL CLI, accelerate defaults, llamafactory-cli (schemas/hf/launchers.json) ---------------------------------------
def _top_at(text, versions, gpus_per_node=None):
    src = _source(text)
    config = Config()
    config.hardware = Hardware(gpus_per_node=gpus_per_node)
    config.versions = dict(versions)
    project = Project([src], config)
    return [launch_topology(c, src, project) for c in commands_of(src, project)]


def test_accelerate_without_num_processes_or_config_is_one_process_per_visible_gpu():
    _, (plain, visible) = _top("accelerate launch t.py\nCUDA_VISIBLE_DEVICES=0,1,2 accelerate launch t.py\n",
                               gpus_per_node=8)
    assert _counts(plain) == (1, 8, 8) and plain.world.filled
    assert any("default_config.yaml" in n for n in plain.notes)
    assert _counts(visible) == (1, 3, 3) and not visible.world.filled
    _, (unknown,) = _top("accelerate launch t.py\n")
    assert unknown.world is None and any("gpus-per-node" in n for n in unknown.notes)


def test_trl_cli_forwards_accelerate_options_by_release():
    text = "trl grpo --model_name_or_path m --num_processes 4\ntrl sft --model_name_or_path m --num_processes 4\n"
    # 0.29 (trl/cli/commands/training.py): every training command hands them to accelerate launch
    grpo, sft = _top_at(text, {"trl": "0.29.0"}, gpus_per_node=8)
    assert _counts(grpo) == (1, 4, 4) and _counts(sft) == (1, 4, 4) and not grpo.world.filled
    # 0.18-0.28 (trl/cli.py): only sft does; grpo starts with accelerate's defaults, all the node's GPUs
    grpo, sft = _top_at(text, {"trl": "0.26.0"}, gpus_per_node=8)
    assert _counts(sft) == (1, 4, 4)
    assert _counts(grpo) == (1, 8, 8) and grpo.world.filled
    assert any("does not pass --num_processes" in n for n in grpo.notes)
    # before 0.18 no command does
    _, sft = _top_at(text, {"trl": "0.17.0"}, gpus_per_node=8)
    assert _counts(sft) == (1, 8, 8) and sft.world.filled


def test_trl_cli_accelerate_config_preset_and_file():
    acc = _source("num_processes: 2\nnum_machines: 1\ndistributed_type: MULTI_GPU\n", path="acc.yaml", kind="yaml")
    src, (preset, file_) = _top("trl sft --model_name_or_path m --accelerate_config zero3\n"
                                "trl sft --model_name_or_path m --accelerate_config acc.yaml\n", others=(acc,))
    assert _counts(preset) == (1, 8, 8) and "accelerate_configs/zero3.yaml" in preset.world.origin
    assert src.span_text(preset.world.span) == "zero3"
    assert _counts(file_) == (1, 2, 2) and file_.world.origin == "num_processes in acc.yaml"


def test_llamafactory_cli_torchrun_from_env():
    src, (inline, exported) = _top("FORCE_TORCHRUN=1 NNODES=2 NPROC_PER_NODE=4 llamafactory-cli train x.yaml\n"
                                   "export FORCE_TORCHRUN=1\nexport NNODES=3\nllamafactory-cli train x.yaml\n",
                                   gpus_per_node=8)
    assert _counts(inline) == (2, 4, 8) and src.span_text(inline.per_node.span) == "4"
    assert _counts(exported) == (3, 8, 24) and exported.per_node.filled and not exported.nodes.filled


def test_llamafactory_cli_without_force_torchrun_by_release():
    text = "llamafactory-cli train x.yaml\nCUDA_VISIBLE_DEVICES=0 llamafactory-cli train x.yaml\n"
    # 0.8+: torchrun by itself when more than one GPU is visible, one process otherwise
    several, one = _top_at(text, {"llamafactory": "0.9.3"}, gpus_per_node=8)
    assert _counts(several) == (1, 8, 8) and several.per_node.filled
    assert _counts(one) == (1, 1, 1) and not one.per_node.filled
    # 0.7 (llmtuner/cli.py): trains in the calling process
    several, _ = _top_at(text, {"llamafactory": "0.7.1"}, gpus_per_node=8)
    assert _counts(several) == (1, 1, 1)
    # USE_RAY (0.9.2+): Ray places the workers, not torchrun
    (ray,) = _top_at("USE_RAY=1 llamafactory-cli train x.yaml\n", {"llamafactory": "0.9.3"}, gpus_per_node=8)
    assert ray.world is None and any("USE_RAY" in n for n in ray.notes)
    (old,) = _top_at("USE_RAY=1 llamafactory-cli train x.yaml\n", {"llamafactory": "0.9.1"}, gpus_per_node=8)
    assert _counts(old) == (1, 8, 8)


def test_trl_cli_reads_accelerate_keys_left_over_in_the_recipe():
    # TrlParser.set_defaults_with_config hands keys no dataclass takes to accelerate launch, before the flags
    recipe = _source("model_name_or_path: m\nnum_processes: 2\naccelerate_config: zero2\n", path="grpo.yaml",
                     kind="yaml")
    _, (yaml_only, flag_wins) = _top("trl grpo --config grpo.yaml\n"
                                     "trl grpo --config grpo.yaml --num_processes 4\n", gpus_per_node=8,
                                     others=(recipe,))
    assert _counts(yaml_only) == (1, 2, 2) and yaml_only.world.origin == "num_processes in grpo.yaml"
    assert yaml_only.world.path == "grpo.yaml" and recipe.span_text(yaml_only.world.span) == "2"
    assert _counts(flag_wins) == (1, 4, 4)
