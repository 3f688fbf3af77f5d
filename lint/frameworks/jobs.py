"""Jobs: one launch each, in the common Settings vocabulary, whatever file or syntax it came from.

A job builder reads one kind of Source (a launch script, an ORZ Python config, a verl override list) and returns
Jobs. Rules about memory and topology read ``job.settings`` only, so one rule serves every framework.

The vocabulary (keys of ``job.settings``); ``<role>`` is one of ROLES:
    framework                      openrlhf | orz | verl | deepspeed | accelerate | trl | torchrun | hf (a script
                                   given `--deepspeed FILE`: the Hugging Face Trainer reads the config)
    framework.version              the release the job was linted against (str)
    job.type                       ppo | grpo | reinforce | dpo | sft | rm | kto | ...
    job.entry                      the module or script that runs (``openrlhf.cli.train_ppo_ray``)
    model.<role>.path              hub id, local directory or name the model comes from
    model.<role>.params            parameter count when given directly (int)
    topology.world_size            total training processes of a plain deepspeed/torchrun/accelerate launch (int)
    topology.nodes / topology.gpus_per_node     the launcher's view
    topology.<role>.nodes / topology.<role>.gpus_per_node
    topology.colocate_all / topology.colocate_actor_ref / topology.colocate_critic_reward (bool): roles placed on
                                   the same GPUs, each in its own process (Ray actors: own CUDA context, own cache)
    topology.shared_process        (bool) every model of the job lives in each training process (OpenRLHF's
                                   deepspeed launches without Ray: train_ppo, train_sft, train_dpo, ...); the
                                   models run one after another, so only one model's activations are live at a
                                   time and the CUDA context counts once. Implied for SFT/DPO/RM policy + ref jobs.
                                   (tuple of roles) exactly those roles share one process per GPU, "vllm" included
                                   when named (verl's hybrid engine worker holds actor, rollout, ref and critic).
    vllm.num_engines / vllm.tensor_parallel_size / vllm.gpu_memory_utilization / vllm.enable_sleep /
    vllm.max_num_seqs / vllm.enforce_eager
    zero.stage                     0..3
    precision.param_dtype          bf16 | fp16 | fp32
    precision.grad_accum_dtype     bf16 | fp16 | fp32 (absent: DeepSpeed ZeRO accumulates in the model dtype; OpenRLHF
                                   <= 0.5.3 wrote fp32 into the ds_config it builds, see its --grad_accum_dtype)
    offload.optimizer / offload.param          none | cpu | nvme
    offload.ref / offload.reward   bool (OpenRLHF --ref_offload, ORZ ref/reward offload)
    batch.micro_train / batch.train / batch.micro_rollout / batch.rollout / batch.grad_accum /
    batch.n_samples_per_prompt
    seq.prompt_max_len / seq.generate_max_len / seq.max_len
    train.gradient_checkpointing / train.flash_attn / train.packing (bool); train.lora_rank (int)
    deepspeed.config_path          the ds_config file the launch names (its Setting's span is the path token)
    deepspeed.enable_sleep / deepspeed.overlap_comm   (bool)
    vllm.sleep_level               1: a sleeping vLLM parks its weights in host RAM; 2: discards them (ORZ)
    vllm.sync_wake                 all | weights: what a sleeping vLLM wakes for the weight sync (whole reservation,
                                   or its weights only: OpenRLHF >= 0.9.2)
    deepspeed.sync_loaded          (bool) the policy's states are loaded while it sends its weights (ORZ: yes;
                                   default: when DeepSpeed does not sleep)
    deepspeed.sleep_keeps          (tuple) estimate terms a sleeping DeepSpeed engine keeps on the GPU
    accelerate.config_path         the accelerate config YAML an ``accelerate launch`` names
    algo.advantage_estimator       gae | group_norm | reinforce | rloo | ...
    reward.remote_url              a reward served over HTTP instead of a reward model
    batch.dynamic / batch.max_tokens_per_gpu   token-budget batching
    train.strategy                 deepspeed (absent: every non-verl launch) | fsdp | fsdp2 | megatron: which memory
                                   model applies (verl: actor_rollout_ref.actor.strategy); megatron gets no estimate
    train.critic.strategy          the critic's, when it differs
    precision.master_dtype         dtype FSDP keeps parameters, gradients and Adam moments in (verl model_dtype; fp32)
    train.remove_padding (bool)    padding-free micro batches: their token count depends on the data
    train.sequence_parallel_size / train.<role>.sequence_parallel_size   Ulysses SP ranks a sequence is sliced over
    train.fsdp_size                GPUs one FSDP shard group spans (-1: all of the role's)
    train.entropy_coeff / train.entropy_checkpointing / train.entropy_chunking / train.torch_compile
                                   what the entropy term of the policy loss keeps on the GPU
    batch.<role>.micro_forward / batch.<role>.forward_dynamic / batch.<role>.forward_max_tokens_per_gpu
                                   forward-only passes of the experience phase (verl: actor log-probs, reference,
                                   critic values)
    batch.<role>.micro_train / batch.<role>.dynamic / batch.<role>.max_tokens_per_gpu   a role's own training
                                   batching (verl's critic); absent: the job-wide batch.* keys
    offload.<role>.param / offload.<role>.optimizer   a role's own offload (verl's critic.model.fsdp_config)
    train.<role>.gradient_checkpointing   a role's own checkpointing (verl's critic)
    train.async (bool) / train.ring_attn_size / train.tensor_parallel_size
"""
from __future__ import annotations


TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Callable, Iterable

from rlhf_lint.startup.records import field, record
from rlhf_lint.model import Settings, Span
from rlhf_lint.startup.interpreter import import_module

ROLES = ("actor", "critic", "ref", "reward", "vllm", "policy")

# Modules that register job builders; imported when the project first asks for its jobs.
BUILDER_MODULES: list[str] = ["rlhf_lint.frameworks.launchers", "rlhf_lint.frameworks.orz", "rlhf_lint.frameworks.verl", "rlhf_lint.frameworks.accelerate"]

# The file kinds each module above builds jobs for, so that a run imports only the builders its files need (orz,
# verl and accelerate_config cost ~7 ms of a one-script run). A module missing here is imported for every kind;
# tests/test_import_cost.py checks this table against what the modules register.
BUILDER_KINDS: dict[str, frozenset[str]] = {
    "rlhf_lint.frameworks.launchers": frozenset({"shell"}),
    "rlhf_lint.frameworks.orz": frozenset({"python"}),
    "rlhf_lint.frameworks.verl": frozenset({"yaml"}),
    "rlhf_lint.frameworks.accelerate": frozenset({"yaml"}),
}

# Every file kind the engine reads: a kind no module above builds jobs for (json, requirements, ...) has no builders
# and imports none. Another kind (a test's, a new builder's) gets every module, as before the table existed.
FILE_KINDS = frozenset({"json", "ds_config", "shell", "python", "yaml", "requirements", "pyproject_toml", "setup_cfg",
                        "dockerfile"})

_BUILDERS: list[tuple[frozenset[str], Callable]] = []


@record
class Job:
    name: str  # short label for reports, e.g. "train_ppo.sh:12 openrlhf.cli.train_ppo_ray"
    path: str  # the file that launches it
    span: Span | None  # the launch command (or config class) in that file
    framework: str
    settings: Settings = field(default_factory=Settings)
    roles: tuple[str, ...] = ()
    assumptions: list[str] = field(default_factory=list)  # what was assumed to build it, shown to users
    hardware: dict = field(default_factory=dict)  # per-file hardware declared in a comment

    def value(self, key: str, default=None):
        return self.settings.value(key, default)


def job_builder(kinds: Iterable[str]) -> Callable[[Callable], Callable]:
    """Register ``func(source, project) -> list[Job]`` for Sources of the given kinds."""

    def decorate(func: Callable) -> Callable:
        _BUILDERS.append((frozenset(kinds), func))
        return func

    return decorate


def builders_for(kind: str) -> list[Callable]:
    known = kind in FILE_KINDS
    for module in list(BUILDER_MODULES):
        if not known or module not in BUILDER_KINDS or kind in BUILDER_KINDS[module]:
            import_module(module)
            BUILDER_MODULES.remove(module)
    return [func for kinds, func in _BUILDERS if kind in kinds]
