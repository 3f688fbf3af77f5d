"""S003 placeholder-value: a launch still carries a template placeholder instead of a real value."""
from __future__ import annotations

from rlhf_lint.model import Finding, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.startup.lazyre import lazy_compile
from rlhf_lint.frameworks.launchers import commands_of


def _is_brace_placeholder(text: str) -> bool:
    r"""`{model_path}`, `{ OUTPUT DIR }`: ``^\{\s*[A-Za-z_][\w\- ]*\}$`` as string tests (JSON values in launch
    scripts start with a brace too; a test compares the two)."""
    body = text[:-1] if text.endswith("\n") else text  # `$` also matches before a final newline
    if len(body) < 3 or body[0] != "{" or body[-1] != "}":
        return False
    name = body[1:-1].lstrip()
    return (name[:1].isascii() and (name[:1].isalpha() or name[:1] == "_")
            and all(ch.isalnum() or ch in "_- " for ch in name[1:]))


# (text every match contains, test, label): the substring test spares most words the regular expression
_PLACEHOLDERS = (
    (("<",), lazy_compile(r"^<[A-Za-z_][\w .\-/]*>$").search, "an angle-bracket placeholder"),
    (("{",), _is_brace_placeholder, "a brace placeholder"),
    (("[",), lazy_compile(r"^\[[A-Z][A-Z0-9_]*\]$").search, "a bracket placeholder"),
    (("path/to/",), lazy_compile(r"(?:^|[/=:])(?:/?path/to/)").search, "a '/path/to/' example path"),
    (("YOUR", "your"), lazy_compile(r"(?:^|[/=_:.-])YOUR[_-][A-Z0-9_]+|(?:^|[/=:.])your[_-][a-z0-9_]+").search,
     "a 'YOUR_...' placeholder"),
)
# keys and flags that only label a run or say where it writes (trainer.project_name, --wandb_run_name,
# trainer.default_local_dir, --save_path): a placeholder there does not stop the launch
_LABEL_OR_OUTPUT = lazy_compile(r"(?:^|[._-])(?:project|experiment|exp|run|group)_?name$"
                                r"|(?:^|[._-])(?:wandb_)?(?:project|group|tags|notes)$"
                                r"|(?:save|output|log|local|ckpt|checkpoint|cache)_?(?:dir|path)$")
_ANGLE_HINT = lazy_compile(r"[A-Z]|path|dir|your|name|token|key|model|file")  # `<think>` is a tag, not a hole


def _placeholder(text: str) -> str | None:
    stripped = text.strip("'\"")
    for needles, test, label in _PLACEHOLDERS:
        if any(n in stripped for n in needles) and test(stripped):
            if label.startswith("an angle") and not _ANGLE_HINT.search(stripped):
                continue
            return label
    return None


@rule("S003", "placeholder-value", Severity.ERROR, kinds={"shell"})
def placeholder_value(ctx):
    """A launch still carries a template placeholder instead of a real value.

    ## What it does
    Reports argument values of a launch command (after expansion) that are template placeholders copied from an
    example: `<OPENRLHF_ROOT_PATH>`, `{wandb_token}`, `[WANDB_TOKENS]`, `/path/to/model`, `YOUR_API_KEY`. A
    placeholder in a value that only names the run or where it writes (`trainer.project_name`, `--save_path`,
    `trainer.default_local_dir`) is a warning: the launch still starts.

    ## Why it matters
    The job is scheduled, loads for minutes, and then fails on a model path or a login token that does not exist.

    ## Example
    ```bash
    python3 -m openrlhf.cli.train_ppo_ray --pretrain /path/to/model --use_wandb {wandb_token}
    ```

    ## Fix
    Put the real value in, or take the flag out.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/examples/scripts/train_ppo_ray_slurm.sh
    """
    seen: set[tuple[int, int]] = set()
    for command in commands_of(ctx.source, ctx.project):
        words = [(a.flag, v) for a in command.launcher_args + command.args for v in a.values]
        words += [(None, w) for w in command.positionals]
        if command.entry is not None:
            words.append((None, command.entry))
        for flag, word in words:
            if not word.known or word.path != ctx.source.path:
                continue
            key = flag
            value = word.text
            if flag is None and "=" in word.text and word is not command.entry:  # a Hydra `key=value` override
                key, value = word.text.split("=", 1)
            label = _placeholder(value)
            if label is None:
                continue
            span = word.edit_span
            if (span.start, span.end) in seen:
                continue
            seen.add((span.start, span.end))
            where = f" (through {word.origin})" if word.origin else ""
            if key is not None and _LABEL_OR_OUTPUT.search(key):
                # a run's name or where it writes: the launch still starts (a logger project, a folder made on save)
                yield Finding(span, f"`{value}` is {label}, not a real value{where}: `{key}` only names the run or "
                                    f"where it writes, so it still starts", severity=Severity.WARNING)
                continue
            yield Finding(span, f"`{value}` is {label}, not a real value{where}")
