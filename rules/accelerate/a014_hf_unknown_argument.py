"""A014 hf-unknown-argument."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule


@rule("A014", "hf-unknown-argument", Severity.ERROR, kinds=("shell",), scope="file")
def hf_unknown_argument(ctx):
    """A flag (or `--config` recipe key) that the training script's HfArgumentParser / TrlParser does not define.

    ## What it does
    For a launch of a training script that builds its parser from dataclasses (`TrlParser((ScriptArguments,
    SFTConfig, ModelConfig))`, `HfArgumentParser(TrainingArguments)`), checks every flag after the script, and every
    key of the YAML given with `--config`, against the fields of those dataclasses at the TRL and transformers
    releases the repository targets (schemas/hf/parser_fields.json, read from each release's wheel). The script is
    TRL's own (`trl sft`, `-m trl.scripts.sft`, `trl/scripts/dpo.py`; accelerate's options given to the `trl` CLI,
    such as `--num_processes`, are the CLI's and not checked) or one the project holds, whose dataclasses all come from
    trl or transformers or are defined in it on such bases; a dataclass from elsewhere, or a script that takes the
    unknown words back (`return_remaining_strings=True`), is not checked. `--x-y` for `--x_y`, `--no_x` and
    abbreviations argparse expands are accepted. An error when TRL (if used) and transformers are pinned within the
    tables, or the name is a field of another release (a rename or a removal); otherwise a warning that says why.
    A recipe key the release drops silently (TRL 0.13 to 0.18, or `fail_with_unknown_args=False`) is a warning.
    `llamafactory-cli train x.yaml key=value` is checked the same way: the YAML's keys, the overrides and the flags
    against the fields of LLaMA-Factory's train arguments (its _TRAIN_ARGS dataclasses, read from each release's
    wheel, with transformers' Seq2SeqTrainingArguments), which every release refuses unless `ALLOW_EXTRA_ARGS` is
    set (the script mentioning it is not checked).

    ## Why it matters
    `ValueError: Some specified arguments are not used by the HfArgumentParser: ['--max_seq_length', '4096']`
    arrives after the launcher has started every process: TRL renames arguments between releases
    (`max_seq_length` became `max_length` in SFTConfig 0.20, `evaluation_strategy` left TrainingArguments), and a
    script written for one release breaks on the next. A recipe key that is dropped silently is worse: the run
    trains with the default.

    ## Example
    ```bash
    # requirements.txt: trl==0.21.0
    accelerate launch sft.py --model_name_or_path Qwen/Qwen2.5-0.5B --max_seq_length 4096
    ```

    ## Fix
    Use the argument's name in the release you pin (the message lists the releases that have it), or pin the
    release the launch was written for.

    ## References
    https://github.com/hiyouga/LlamaFactory/issues/7412
    https://github.com/huggingface/transformers/blob/v4.46.0/src/transformers/hf_argparser.py
    https://github.com/huggingface/trl/blob/v0.19.1/trl/scripts/utils.py
    https://github.com/huggingface/trl/releases/tag/v0.20.0
    """
    from rlhf_lint.frameworks.hf_parser import unknown_arguments
    from rlhf_lint.frameworks.launchers import commands_of

    for command in commands_of(ctx.source, ctx.project):
        if command.path != ctx.source.path:
            continue
        for u in unknown_arguments(command, ctx.project):
            yield Finding(u.span, u.message, path=u.path,
                          severity=None if u.certain else Severity.WARNING)
