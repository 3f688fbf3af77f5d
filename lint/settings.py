"""The settings vocabulary: every key of ``job.settings`` (rlhf_lint.model.Settings), declared once, as data.

A job builder (rlhf_lint.frameworks.*) writes a launch in these keys, whatever file or syntax it came from; rules
about memory and topology read them, so one rule serves every framework. A key that is not declared here is a typo:
``Settings`` refuses to store or read it (UndeclaredSetting), and tests/test_settings.py fails on any key literal in
the package that is not declared.

VOCABULARY holds one ``(name, type, meaning)`` per key. ``<role>`` in a name stands for each of ROLES
(``model.<role>.path`` declares ``model.actor.path``, ``model.critic.path``, ...). The type is what a known value is
(a builtin type or a tuple of them); any key may also hold UNKNOWN, a value that cannot be known without running
something. Offloads and dtypes are lower-case names (``cpu``, ``bf16``).

Cheap at import on purpose (every run imports it through rlhf_lint.model): builtins only, one frozenset.
"""
from __future__ import annotations

ROLES = ("actor", "critic", "ref", "reward", "vllm", "policy")
ROLE = "<role>"

VOCABULARY = (
    # -- what runs ------------------------------------------------------------------------------------------------
    ("framework", str, "openrlhf | orz | verl | deepspeed | accelerate | trl | llamafactory | swift | torchrun | hf "
                       "(a script given `--deepspeed FILE`: the Hugging Face Trainer reads the config) | python"),
    ("framework.version", str, "the release the job was linted against"),
    ("job.type", str, "ppo | grpo | reinforce | dpo | sft | rm | kto | ..."),
    ("job.unmodelled", str, "why the estimate gives this launch no figures (a trainer or layout it does not model: "
                            "ms-swift's GRPO / PPO / GKD, a model split over GPUs by device_map, an unknown tuner)"),
    ("job.entry", str, "the module or script that runs (``openrlhf.cli.train_ppo_ray``)"),
    ("job.launcher", str, "the program that starts it: python, torchrun, deepspeed, accelerate, ..."),
    ("algo.advantage_estimator", str, "gae | group_norm | reinforce | rloo | ..."),
    ("reward.remote_url", str, "a reward served over HTTP instead of a reward model"),
    # -- HF Trainer / TRL / LLaMA-Factory: TrainingArguments as the launch gives them (rlhf_lint.frameworks.hf) ------
    ("hf.config_path", str, "the recipe YAML a launch names (`--config`, llamafactory-cli's positional YAML)"),
    ("hf.certain", bool, "every TrainingArguments source of the launch was read and the program surely parses them "
                         "(a TRL CLI or script, LLaMA-Factory); False: a script given TrainingArguments-like flags, "
                         "or a recipe the project does not hold"),
    ("hf.mixed_precision", str, "bf16 | fp16 | no: TrainingArguments bf16 / fp16 as written (absent: neither given)"),
    ("hf.max_grad_norm", float, "TrainingArguments max_grad_norm as written"),
    ("hf.per_device_eval_batch_size", int, "TrainingArguments per_device_eval_batch_size as written"),
    ("trl.num_generations", int, "GRPO/RLOO completions per prompt"),
    ("trl.generation_batch_size", int, "GRPO prompts x completions generated per generation step"),
    ("trl.steps_per_generation", int, "GRPO optimisation steps per generation batch"),
    ("trl.use_vllm", bool, "TRL generates with vLLM"),
    ("trl.vllm_mode", str, "colocate | server: vLLM in the training processes or on its own GPUs"),
    ("trl.precompute_ref_log_probs", bool, "DPO computes the reference log-probs before training"),
    # -- models ---------------------------------------------------------------------------------------------------
    ("model.<role>.path", str, "hub id, local directory or name the role's model comes from"),
    ("model.<role>.params", (int, str), "the role's parameter count when given directly (int, or a size such as "
                                        "7B from the command line)"),
    # -- topology -------------------------------------------------------------------------------------------------
    ("topology.layout_guess", str, "what the launch leaves open about how its processes place the model on GPUs "
                                   "(a memory verdict resting on it is at most a warning)"),
    ("checkpoint.save_freq", int, "verl trainer.save_freq: steps between checkpoints (-1, the default: none saved)"),
    ("topology.world_size", int, "total training processes of a plain deepspeed/torchrun/accelerate launch"),
    ("topology.model_split", int, "GPUs one training process splits its model over (device_map: naive model "
                                  "parallelism, layers kept whole)"),
    ("topology.nodes", int, "nodes, the launcher's view"),
    ("topology.gpus_per_node", int, "GPUs per node, the launcher's view"),
    ("topology.<role>.nodes", int, "nodes the role runs on"),
    ("topology.<role>.gpus_per_node", int, "GPUs per node the role runs on"),
    ("topology.colocate_all", bool, "every role on the same GPUs, each in its own process (Ray actors: own CUDA "
                                    "context, own cache)"),
    ("topology.colocate_actor_ref", bool, "actor and reference on the same GPUs, each in its own process"),
    ("topology.colocate_critic_reward", bool, "critic and reward model on the same GPUs, each in its own process"),
    ("topology.shared_process", (bool, tuple),
     "True: every model of the job lives in each training process (OpenRLHF's deepspeed launches without Ray), "
     "the models run one after another, so one model's activations are live at a time and the CUDA context counts "
     "once (implied for SFT/DPO/RM policy + ref jobs); a tuple of roles: exactly those share one process per GPU, "
     "vllm included when named (verl's hybrid engine worker holds actor, rollout, ref and critic)"),
    # -- the launch's demand on the hardware (launchers.launch_topology; M010 compares it with the profile) ------
    ("topology.device_ids", tuple, "GPU indices the launch names on a node (CUDA_VISIBLE_DEVICES, deepspeed "
                                   "--include localhost:4,5,6,7, accelerate --gpu_ids): each must exist there"),
    ("topology.visible_gpus", int, "GPUs CUDA_VISIBLE_DEVICES (or accelerate --gpu_ids) leaves to the processes of "
                                   "a node: a launcher starting more processes than this fails"),
    # -- vLLM -----------------------------------------------------------------------------------------------------
    ("vllm.num_engines", int, "vLLM engines of the rollout"),
    ("vllm.tensor_parallel_size", int, "GPUs one vLLM engine spans"),
    ("vllm.gpu_memory_utilization", float, "share of the GPU a vLLM engine reserves"),
    ("vllm.enable_sleep", bool, "vLLM frees its memory between generations"),
    ("vllm.max_num_seqs", int, "sequences a vLLM engine schedules at once"),
    ("rollout.engine", str, "vllm | sglang: the inference engine of the rollout role (the estimate's vllm role; "
                            "absent: vLLM)"),
    ("vllm.max_num_batched_tokens", int, "tokens a vLLM engine schedules in one step (what the V1 engine's profile "
                                         "run puts through the model)"),
    ("vllm.enforce_eager", bool, "vLLM runs without CUDA graphs"),
    ("vllm.max_model_len", (int, str), "the context length a vLLM engine is built for (int), or "
                                       "\"max_position_embeddings\" where the framework leaves it to vLLM, which "
                                       "takes the model's"),
    ("vllm.max_model_len_assumed", bool, "vllm.max_model_len comes from the newest release's rule (the framework's "
                                         "release is not known): no verdict rests on it"),
    ("vllm.sleep_level", int, "1: a sleeping vLLM parks its weights in host RAM; 2: discards them (ORZ)"),
    ("vllm.sync_wake", str, "all | weights: what a sleeping vLLM wakes for the weight sync (whole reservation, or "
                            "its weights only: OpenRLHF >= 0.9.2)"),
    # -- DeepSpeed and accelerate ---------------------------------------------------------------------------------
    ("zero.stage", int, "ZeRO stage, 0..3 (FSDP full sharding counts as 3)"),
    ("deepspeed.config_path", str, "the ds_config file the launch names (its Setting's span is the path token)"),
    ("deepspeed.config_unread", str, "a ds_config the launch names that was not read (not among the files checked, "
                                     "or its path unknown): its ZeRO stage and offload are open"),
    ("accelerate.config_unread", str, "an accelerate config the launch names that was not read: whether it shards "
                                      "(DeepSpeed, FSDP) and offloads is open"),
    ("deepspeed.enable_sleep", bool, "DeepSpeed engines offload their states between uses"),
    ("deepspeed.overlap_comm", bool, "ZeRO overlap_comm (its buckets stay allocated); absent: on at stage 3"),
    ("deepspeed.sync_loaded", bool, "the policy's states are loaded while it sends its weights (ORZ: yes; "
                                    "absent: when DeepSpeed does not sleep)"),
    ("deepspeed.sleep_keeps", tuple, "estimate terms a sleeping DeepSpeed engine keeps on the GPU"),
    ("accelerate.config_path", str, "the accelerate config YAML an ``accelerate launch`` names"),
    ("runtime.expandable_segments", bool, "PyTorch's caching allocator maps expandable segments (PYTORCH_CUDA_ALLOC_CONF "
                                          "expandable_segments:True, or a launcher that sets it)"),
    # -- precision ------------------------------------------------------------------------------------------------
    ("precision.param_dtype", str, "bf16 | fp16 | fp32 (| fp8 from accelerate): the model's training dtype"),
    ("precision.grad_accum_dtype", str, "bf16 | fp16 | fp32 (absent: DeepSpeed ZeRO accumulates in the model dtype; "
                                        "OpenRLHF <= 0.5.3 wrote fp32 into the ds_config it builds)"),
    ("precision.master_dtype", str, "dtype FSDP keeps parameters, gradients and Adam moments in (verl model_dtype)"),
    ("precision.adapter_dtype", str, "bf16 | fp16 | fp32: LoRA adapters' dtype without DeepSpeed (absent: PEFT's "
                                     "rule for its release, schemas/hf/peft_adapter_dtype.json)"),
    ("precision.half_trainable", bool, "trainable parameters stay in the 16-bit dtype, no fp32 upcast (LLaMA-Factory "
                                      "pure_bf16)"),
    ("precision.<role>.master_dtype", str, "a role's own FSDP master dtype (read before precision.master_dtype; no "
                                           "builder writes one yet)"),
    # -- offload --------------------------------------------------------------------------------------------------
    ("offload.optimizer", str, "none | cpu | nvme: where optimizer states live"),
    ("offload.param", str, "none | cpu | nvme: where parameters live"),
    ("offload.ref", bool, "the reference model's parameters are offloaded (OpenRLHF --ref_offload, ORZ)"),
    ("offload.reward", bool, "the reward model's parameters are offloaded (OpenRLHF, ORZ)"),
    ("offload.<role>.param", str, "none | cpu: a role's own parameter offload (verl's critic.model.fsdp_config)"),
    ("offload.<role>.optimizer", str, "none | cpu: a role's own optimizer offload (verl's critic)"),
    # -- batching -------------------------------------------------------------------------------------------------
    ("batch.micro_train", int, "training micro batch per GPU"),
    ("batch.train", int, "global training batch"),
    ("batch.micro_rollout", int, "micro batch of the experience forward passes"),
    ("batch.rollout", int, "prompts per rollout"),
    ("batch.grad_accum", int, "gradient accumulation steps"),
    ("batch.n_samples_per_prompt", int, "samples generated per prompt"),
    ("batch.dynamic", bool, "token-budget batching of training micro batches"),
    ("batch.max_tokens_per_gpu", int, "the token budget of one training micro batch per GPU"),
    ("batch.micro_forward", int, "forward-only micro batch per GPU, any role (absent: batch.micro_train)"),
    ("batch.forward_dynamic", bool, "token-budget batching of forward-only passes, any role"),
    ("batch.forward_max_tokens_per_gpu", int, "the token budget of one forward-only micro batch, any role"),
    ("batch.<role>.micro_forward", int, "a role's forward-only micro batch (verl: actor log-probs, reference, critic "
                                        "values)"),
    ("batch.<role>.forward_dynamic", bool, "a role's forward-only passes use token-budget batching"),
    ("batch.<role>.forward_max_tokens_per_gpu", int, "a role's forward-only token budget per GPU"),
    ("batch.<role>.micro_train", int, "a role's own training micro batch (verl's critic; absent: batch.micro_train)"),
    ("batch.<role>.dynamic", bool, "a role's own token-budget training batching (absent: batch.dynamic)"),
    ("batch.<role>.max_tokens_per_gpu", int, "a role's own training token budget (absent: batch.max_tokens_per_gpu)"),
    # -- sequence lengths -----------------------------------------------------------------------------------------
    ("seq.prompt_max_len", int, "longest prompt, in tokens"),
    ("seq.generate_max_len", int, "longest generated response, in tokens"),
    ("seq.max_len", int, "longest sequence (prompt + response), in tokens"),
    ("model.lm_logits", bool, "the trained model's loss runs the LM head over the vocabulary (absent: yes); False: a "
                              "classification or embedding head"),
    ("batch.pairs_packed_together", bool, "packing bins each preference pair whole (chosen + rejected count as one "
                                          "sample of their summed length) into rows of the length bound, instead of "
                                          "packing chosen and rejected rows apart"),
    ("seq.max_len_truncates", bool, "the longest sequence is only a truncation bound: micro batches are padded to "
                                    "their longest sample (or packed), so their token count depends on the data"),
    # -- training -------------------------------------------------------------------------------------------------
    ("train.strategy", str, "deepspeed (absent: every non-verl launch) | fsdp | fsdp2 | megatron | ddp (an HF Trainer "
                            "launch without a DeepSpeed config): which memory model applies (verl: "
                            "actor_rollout_ref.actor.strategy); megatron gets no estimate"),
    ("train.critic.strategy", str, "the critic's strategy, when it differs"),
    ("train.gradient_checkpointing", bool, "activations are recomputed in the backward pass"),
    ("train.activation_offloading", bool, "TRL's activation_offloading: the tensors saved for the backward go to "
                                          "pinned host RAM in the forward and come back layer by layer"),
    ("train.<role>.gradient_checkpointing", bool, "a role's own checkpointing (verl's critic)"),
    ("train.flash_attn", bool, "flash attention"),
    ("train.packing", bool, "samples packed into one sequence"),
    ("train.lora_rank", int, "LoRA rank (0: full fine-tuning)"),
    ("train.remove_padding", bool, "padding-free micro batches: their token count depends on the data"),
    ("train.<role>.remove_padding", bool, "a role's own padding-free micro batches (verl's critic)"),
    ("train.sequence_parallel_size", int, "Ulysses SP ranks a sequence is sliced over"),
    ("train.<role>.sequence_parallel_size", int, "a role's own Ulysses SP ranks (verl's critic)"),
    ("train.fsdp_size", int, "GPUs one FSDP shard group spans (-1: all of the role's)"),
    ("train.entropy_coeff", float, "weight of the entropy term of the policy loss"),
    ("train.entropy_checkpointing", bool, "the entropy term is recomputed in the backward pass"),
    ("train.entropy_chunking", bool, "the entropy term is computed over chunks of the logits"),
    ("train.torch_compile", bool, "the entropy term is compiled with torch.compile (verl: on by default)"),
    ("train.async", bool, "asynchronous training (OpenRLHF --async_train)"),
    ("train.ring_attn_size", int, "ring attention group size"),
    ("train.tensor_parallel_size", int, "DeepSpeed AutoTP size of the trained model"),
    # -- Megatron-Core layout (ms-swift `megatron sft|rlhf`): read by the Megatron memory terms
    ("megatron.tensor_parallel", int, "tensor_model_parallel_size: ranks each layer's weights are split over"),
    ("megatron.pipeline_parallel", int, "pipeline_model_parallel_size: stages the layers are split into"),
    ("megatron.virtual_pipeline", int, "virtual_pipeline_model_parallel_size: model chunks per stage (interleaved)"),
    ("megatron.context_parallel", int, "context_parallel_size: ranks each sequence is split over"),
    ("megatron.<role>.tensor_parallel", int, "a role's own tensor-parallel size (verl's critic)"),
    ("megatron.<role>.pipeline_parallel", int, "a role's own pipeline-parallel size (verl's critic)"),
    ("megatron.<role>.context_parallel", int, "a role's own context-parallel size (verl's critic)"),
    ("megatron.<role>.expert_parallel", int, "a role's own expert-parallel size (verl's critic)"),
    ("megatron.<role>.recompute", str, "a role's own recompute granularity (verl's critic)"),
    ("megatron.mtp_layers", int, "mtp_num_layers: multi-token-prediction layers after the last stage's decoder"),
    ("megatron.first_stage_layers", int, "decoder_first_pipeline_num_layers: layers of the first pipeline stage"),
    ("megatron.last_stage_layers", int, "decoder_last_pipeline_num_layers: layers of the last pipeline stage"),
    ("megatron.expert_parallel", int, "expert_model_parallel_size: ranks the routed experts are split over"),
    ("megatron.expert_tensor_parallel", int, "expert_tensor_parallel_size: ranks each expert is split over"),
    ("megatron.sequence_parallel", bool, "sequence parallelism: activations outside attention and MLP split over TP"),
    ("megatron.distributed_optimizer", bool, "use_distributed_optimizer: fp32 master and Adam states split over DP"),
    ("megatron.recompute", str, "recompute_granularity: selective | full | none"),
    ("megatron.recompute_method", str, "recompute_method: uniform | block"),
    ("megatron.recompute_num_layers", int, "recompute_num_layers: layers per recomputed chunk (uniform) or "
                                           "recomputed layers per stage (block)"),
    ("megatron.optimizer_offload_fraction", float, "optimizer_offload_fraction: share of the optimizer on the CPU "
                                                   "when offload.optimizer is cpu"),
    ("megatron.main_grads_dtype", str, "main_grads_dtype: fp32 | bf16, the gradient buffer's dtype"),
    # -- parameter-efficient training, optimizer, loss, MoE: written by the HF Trainer / TRL / LLaMA-Factory builders,
    # read by the memory estimate
    ("train.lora_targets", tuple, "module names LoRA adapters attach to (empty or absent: the builder's default)"),
    ("train.lora_modules_to_save", tuple,
     "modules a LoRA job trains in full beside its adapters (PEFT modules_to_save)"),
    ("train.quantization", str, "none | 4bit | 8bit: the frozen base weights' format (QLoRA: 4bit)"),
    ("train.optimizer", str, "adamw | adamw_8bit | paged_adamw_8bit | adafactor | sgd | lion | ...: whose states "
                             "count"),
    ("train.optimizer_impl", str, "the module the optimizer class comes from (verl optim.optimizer_impl: torch.optim, "
                                  "bitsandbytes.optim, torchao.optim); absent: the framework's default"),
    ("train.optimizer_foreach", bool, "the launch picks torch's optimizer kernel: true foreach (multi-tensor), false "
                                      "fused or per-parameter; absent: torch's default"),
    ("verl.inference_cpu_offload", bool, "verl keeps the reference and reward models' FSDP shards in host RAM "
                                         "(CPUOffload, forced from verl 0.2; 0.1 keeps them on the GPU)"),
    ("train.fused_loss", bool, "the loss is computed over chunks of the logits (liger kernel, chunked "
                               "cross-entropy): full-vocabulary logits are never materialised"),
    ("model.<role>.active_params", int, "parameters active per token (MoE: shared parts plus the routed experts "
                                        "used); absent: all of them"),
    ("train.expert_parallel_size", int, "GPUs the experts of one MoE layer are spread over"),
    # -- partial training and memory-saving optimizers (LLaMA-Factory's freeze tuning, GaLore, APOLLO, BAdam): what
    # trains and what the optimizer keeps (schemas/hf/training_args.json llamafactory_methods)
    ("train.pref_loss", str, "the preference loss (LLaMA-Factory pref_loss: sigmoid, ipo, orpo, simpo, ...); orpo "
                             "and simpo need no reference model"),
    ("train.freeze_vision", bool, "a multimodal model's vision tower and projector are frozen in full tuning: the "
                                  "parameters outside the language model get no gradients or optimizer states"),
    ("train.freeze_layers", int, "freeze tuning: decoder layers that train, the last N (negative: the first -N); "
                                 "the rest is frozen; absent: no freeze tuning"),
    ("train.freeze_modules", tuple, "freeze tuning: the modules of those layers that train (all: every one)"),
    ("train.freeze_extra_modules", tuple, "freeze tuning: modules outside the layers that also train (embed_tokens, "
                                          "lm_head, norm)"),
    ("train.projected_optimizer", str, "galore | apollo: Adam moments of rank-r projections of the targeted "
                                       "matrices' gradients instead of full-size ones"),
    ("train.projection_rank", int, "rank r of the gradient projections"),
    ("train.projection_targets", tuple, "module names whose matrices are projected (all: every linear layer of the "
                                        "decoder)"),
    ("train.projection_type", str, "std | reverse_std | right | left | full: which side of a matrix is projected"),
    ("train.projection_method", str, "svd | random: how the projection is made (svd: an SVD of the gradient)"),
    ("train.optimizer_layerwise", bool, "each parameter is updated by its own optimizer in the backward, its "
                                        "gradient freed right after (per-layer GaLore / APOLLO)"),
    ("train.block_optimizer", str, "layer | ratio: BAdam trains one block (decoder layer) at a time, or a share of "
                                   "each matrix's entries"),
    ("train.block_update_ratio", float, "BAdam ratio mode: the share of each matrix's entries updated"),
    # -- memory inputs read from the ds_config (issue 15): sizes in elements, absent: DeepSpeed's default ("auto":
    # deepspeed.auto_sizes)
    ("deepspeed.optimizer", str, "optimizer.type of the ds_config: DeepSpeed builds the optimizer (absent: the "
                                 "trainer passes its own, the HF Trainer's TrainingArguments.optim)"),
    ("deepspeed.auto_sizes", tuple, "ds_config sizes written \"auto\" (reduce_bucket_size, "
                                    "stage3_prefetch_bucket_size): accelerate fills them from the model's hidden size, "
                                    "DeepSpeed alone keeps its defaults"),
    ("deepspeed.reduce_bucket_size", int, "zero_optimization.reduce_bucket_size (elements)"),
    ("deepspeed.allgather_bucket_size", int, "zero_optimization.allgather_bucket_size (elements, ZeRO-1/2)"),
    ("deepspeed.sub_group_size", int, "zero_optimization.sub_group_size (elements, ZeRO-3 optimizer step)"),
    ("deepspeed.max_live_parameters", int, "zero_optimization.stage3_max_live_parameters (elements)"),
    ("deepspeed.prefetch_bucket_size", int, "zero_optimization.stage3_prefetch_bucket_size (elements)"),
    # -- TRL GRPO memory inputs (issue 15): the trainer's reference model and HF generate
    ("trl.beta", float, "GRPO KL coefficient as written (0: GRPOTrainer loads no reference model)"),
    ("deepspeed.offload_param_pin_memory", bool, "zero_optimization.offload_param.pin_memory (absent: DeepSpeed's "
                                                 "default, false up to 0.19.4, true from 0.19.5)"),
    ("deepspeed.offload_optimizer_pin_memory", bool, "zero_optimization.offload_optimizer.pin_memory (absent: "
                                                     "DeepSpeed's default, false up to 0.19.4, true from 0.19.5)"),
    # -- TRL / HF Trainer recipes (issue 15, trl15): the dtype the model is loaded in
    ("hf.torch_dtype", str, "bf16 | fp16 | fp32 | auto: from_pretrained's dtype (TRL ModelConfig torch_dtype / dtype); "
                            "without DeepSpeed the trained weights, gradients and AdamW moments stay in it"),
    ("precision.loaded_dtype_open", str, "bf16 | fp16: the 16-bit reading of a loaded dtype the launch leaves open "
                                         "(torch_dtype auto with the checkpoint's dtype unknown, or unset where "
                                         "transformers 5 may load the checkpoint's): the low end of the band; the "
                                         "nominal figure stays fp32"),
    # -- accelerate FSDP launches (issue 15, fsdp15): how long the gathered parameters stay on the GPU
    ("train.fsdp_reshard_after_forward", bool, "false: the parameters gathered in forward stay until backward "
                                               "(SHARD_GRAD_OP, HYBRID_SHARD_ZERO2, FSDP2 reshard_after_forward "
                                               "false); absent: FULL_SHARD's one unit at a time"),
    ("train.fsdp_cpu_ram_efficient_loading", bool, "accelerate FSDP: only rank 0 loads the checkpoint into host "
                                                  "RAM (false: every rank loads a full copy; absent: verl's rank 0)"),
)


def _declared() -> frozenset:
    keys = []
    for name, _, _ in VOCABULARY:
        if ROLE in name:
            keys += [name.replace(ROLE, role) for role in ROLES]
        else:
            keys.append(name)
    return frozenset(keys)


DECLARED = _declared()  # every key, roles expanded: ~30 us at import, one set lookup per Settings call


class UndeclaredSetting(LookupError):
    """A settings key that VOCABULARY does not declare: a typo, or a new key to declare there."""


def is_declared(key) -> bool:
    return key in DECLARED


def check_key(key: str) -> str:
    """``key`` itself when it is declared, else UndeclaredSetting naming it."""
    if key not in DECLARED:
        raise UndeclaredSetting(f"settings key {key!r} is not declared in rlhf_lint.settings.VOCABULARY")
    return key
