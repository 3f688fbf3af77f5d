"""S: launch scripts as bash runs them (continuations, repeated flags, placeholders, ray, globs, heredoc quotes)."""
from __future__ import annotations

import re

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Related, Severity, Span
from rlhf_lint.engine.registry import rule
from rlhf_lint.startup.lazyre import lazy_compile

_SHELL = {"shell"}


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
_ANGLE_HINT = lazy_compile(r"[A-Z]|path|dir|your|name|token|key|model|file")  # `<think>` is a tag, not a hole
_GLOB_BRACKET = lazy_compile(r"\[[^\]\s]+\]")
# `\  # note` at the end of a line: the backslash escapes a blank, not the newline
_BACKSLASH_COMMENT = lazy_compile(r"\\[ \t]+#[^\r\n]*(?=\r?\n)")
# a dotted Hydra override (`actor.optim.lr=1e-6`) is no valid shell assignment: at a line start bash runs it as a
# command, so such a line is an orphaned piece of the launch above
_HYDRA_OVERRIDE = lazy_compile(r"^[+~]{0,2}[A-Za-z_][\w-]*(?:\.[\w-]+)+=")


def _has_glob(text: str) -> bool:
    """`*`, `?` or a `[...]` class: bash would expand the word against file names."""
    return "*" in text or "?" in text or ("[" in text and _GLOB_BRACKET.search(text) is not None)


def _script(ctx):
    from rlhf_lint.readers.shell import script_of

    return script_of(ctx.source, ctx.project)


def _commands(ctx):
    from rlhf_lint.readers.shell import commands_of

    return commands_of(ctx.source, ctx.project)


def _node_type_at(script, char_offset: int) -> str:
    """The tree-sitter node type at a character offset of the top-level script (ASCII prefix assumed exact)."""
    doc = script.doc
    byte = len(doc.text[:char_offset].encode("utf-8"))
    node = doc.tree.root_node.descendant_for_byte_range(byte, byte + 1)
    types = []
    while node is not None:
        types.append(node.type)
        node = node.parent
    return ",".join(types)


@rule("S001", "broken-line-continuation", Severity.ERROR, kinds=_SHELL, fixable=True)
def broken_line_continuation(ctx):
    """A `\\` that does not continue the line, so the rest of the command runs as a separate command.

    ## What it does
    Finds a backslash followed by spaces before the end of a line (the backslash then escapes a space, and the
    newline ends the command), and lines that start with a flag after a line that did not end with `\\` (the
    flag runs as a command of its own).

    ## Why it matters
    The launch starts with only the flags before the break, so it trains with defaults for everything after it
    (or fails on a missing required flag), and the shell then prints `--actor_learning_rate: command not found`
    long after the job was queued. Invisible in review: trailing spaces do not show.

    ## Example
    ```bash
    deepspeed --module openrlhf.cli.train_sft \\
       --max_len 2048 \\   <- spaces after the backslash
       --zero_stage 3
    ```

    ## Fix
    Trailing blanks after the backslash are removed (safe). A missing backslash is added at the end of the line
    before the orphaned flag (unsafe: the command gains arguments it did not have).

    ## References
    - https://www.gnu.org/software/bash/manual/bash.html#Escape-Character
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/examples/scripts/train_sft_mixtral_lora.sh
    """
    script = _script(ctx)
    if script is None:
        return
    text = ctx.source.text
    # the patterns below need a backslash followed by a blank: most scripts have none
    spaced = "\\ " in text or "\\\t" in text
    for m in re.finditer(r"\\([ \t]+)(?=\r?\n)", text) if spaced else ():
        start = m.start()
        backslashes = len(text[:start + 1]) - len(text[:start + 1].rstrip("\\"))
        if backslashes % 2 == 0:
            continue  # `\\` is an escaped backslash
        line = ctx.source.position(start).line
        if ctx.source.line_text(line).lstrip().startswith("#"):
            continue
        types = _node_type_at(script, start)
        if any(t in types.split(",") for t in ("comment", "raw_string", "string")):
            continue
        nxt = ctx.source.line_text(line + 1).strip() if line < ctx.source.line_count() else ""
        if not nxt or nxt.startswith("#"):
            continue
        in_heredoc = "heredoc_body" in types
        what = ("inside the heredoc the backslash stays in the text and becomes a stray `\\` argument"
                if in_heredoc else "the backslash escapes the blank instead of the newline, so the command ends here")
        yield Finding(Span(start, m.end()), f"whitespace after the line-continuation backslash: {what}",
                      fix=Fix("remove the whitespace after the backslash", (Edit(m.start(1), m.end(1), ""),),
                              Applicability.SAFE))
    commented = set()  # lines whose break the comment check below already reports
    for m in _BACKSLASH_COMMENT.finditer(text) if spaced else ():
        start = m.start()
        backslashes = len(text[:start + 1]) - len(text[:start + 1].rstrip("\\"))
        line = ctx.source.position(start).line
        if backslashes % 2 == 0 or ctx.source.line_text(line).lstrip().startswith("#"):
            continue
        types = _node_type_at(script, start)
        if any(t in types.split(",") for t in ("comment", "raw_string", "string", "heredoc_body")):
            continue
        nxt = ctx.source.line_text(line + 1).strip() if line < ctx.source.line_count() else ""
        if not nxt or nxt.startswith("#"):
            continue
        commented.add(line)
        yield Finding(Span(start, m.end()),
                      "a comment after the line-continuation backslash: the backslash escapes the blank, the "
                      "comment runs to the end of the line, so the command ends here (move the comment to a line "
                      "of its own)")
    commands = [c for c in script.simple_commands if c.path == ctx.source.path and c.depth == 0]
    for simple in commands:
        first = simple.words[0] if simple.words else None
        if first is None or not first.known or len(first.text) < 2:
            continue
        if not first.text.startswith("-") and not ("=" in first.text and _HYDRA_OVERRIDE.match(first.text)):
            continue
        line = ctx.source.position(simple.span.start).line
        if line < 2 or (line - 1) in commented:
            continue
        prev = ctx.source.line_text(line - 1)
        stripped = prev.rstrip()
        if not stripped or stripped.endswith("\\"):
            continue
        related = ()
        fix = None
        if "#" not in prev:
            end = ctx.source.line_span(line - 1).start + len(stripped)
            fix = Fix(f"end line {line - 1} with a line continuation", (Edit.insert(end, " \\"),),
                      Applicability.UNSAFE)
        yield Finding(Span(first.span.start, first.span.end),
                      f"`{first.text}` starts a command of its own: line {line - 1} does not end with `\\`, so the "
                      f"command above ends there and this line runs separately",
                      fix=fix, related=related)


@rule("S002", "duplicate-flag", Severity.WARNING, kinds=_SHELL, fixable=False)
def duplicate_flag(ctx):
    """A flag is given twice to the same launch; the program keeps the last one.

    ## What it does
    Reports every earlier occurrence of a flag that the same command repeats later (after expanding variables,
    arrays and heredocs), with the value that actually wins.

    ## Why it matters
    argparse keeps the last value without a warning, so a value edited in one place silently has no effect when
    a shared array or a later line sets it again. Scripts grown by copy and paste often carry both.

    ## Example
    ```bash
    python3 -m openrlhf.cli.train_ppo_ray --micro_train_batch_size 4 ... --micro_train_batch_size 8
    ```

    ## Fix
    Delete the occurrence you do not mean (shown as a suggestion: which one is intended is for you to say).

    ## References
    - https://docs.python.org/3/library/argparse.html#action
    """
    from rlhf_lint.fixers.shell import remove_flag

    text = ctx.source.text
    for command in _commands(ctx):
        seen: dict[str, list] = {}
        for arg in command.args:
            if arg.word is not None and not arg.word.known:
                continue
            seen.setdefault(arg.flag, []).append(arg)
        for flag, args in seen.items():
            if len(args) < 2:
                continue
            last = args[-1]
            last_value = " ".join(str(v.text) for v in last.values) if last.values else "(no value)"
            last_line = ctx.source.position(last.flag_span.start).line if last.word.path == ctx.source.path else 0
            for arg in args[:-1]:
                if arg.word is None or arg.word.path != ctx.source.path:
                    continue
                value = " ".join(str(v.text) for v in arg.values) if arg.values else "(no value)"
                fix = None
                if all(v.path == ctx.source.path for v in arg.values):
                    fix = Fix(f"remove this {flag}", remove_flag(text, command, arg), Applicability.DISPLAY)
                where = f"line {last_line}" if last_line else "later"
                yield Finding(arg.flag_span, f"`{flag}` is given again on {where}; the last value ({last_value}) "
                                             f"wins and this one ({value}) is ignored",
                              fix=fix, related=(Related(last.word.path, last.flag_span, f"`{flag}` repeated here"),))


def _placeholder(text: str) -> str | None:
    stripped = text.strip("'\"")
    for needles, test, label in _PLACEHOLDERS:
        if any(n in stripped for n in needles) and test(stripped):
            if label.startswith("an angle") and not _ANGLE_HINT.search(stripped):
                continue
            return label
    return None


@rule("S003", "placeholder-value", Severity.ERROR, kinds=_SHELL)
def placeholder_value(ctx):
    """A launch still carries a template placeholder instead of a real value.

    ## What it does
    Reports argument values of a launch command (after expansion) that are template placeholders copied from an
    example: `<OPENRLHF_ROOT_PATH>`, `{wandb_token}`, `[WANDB_TOKENS]`, `/path/to/model`, `YOUR_API_KEY`.

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
    for command in _commands(ctx):
        words = [v for a in command.launcher_args + command.args for v in a.values] + list(command.positionals)
        if command.entry is not None:
            words.append(command.entry)
        for word in words:
            if not word.known or word.path != ctx.source.path:
                continue
            value = word.text.split("=", 1)[1] if word in command.positionals and "=" in word.text else word.text
            label = _placeholder(value)
            if label is None:
                continue
            span = word.edit_span
            if (span.start, span.end) in seen:
                continue
            seen.add((span.start, span.end))
            where = f" (through {word.origin})" if word.origin else ""
            yield Finding(span, f"`{value}` is {label}, not a real value{where}")


def _ray_entry(words):
    from rlhf_lint.frameworks.launchers import _options, launcher_specs

    i = 0
    while i < len(words) and words[i].known and "=" in words[i].text and not words[i].text.startswith("-"):
        i += 1
    if [w.text for w in words[i : i + 3]] != ["ray", "job", "submit"]:
        return None, False
    if any(w.known and w.text == "--" for w in words[i + 3 :]):
        return None, False
    _, j = _options(words, i + 3, launcher_specs()["ray_job_submit"])
    return (words[j] if j < len(words) else None), True


@rule("S004", "ray-job-submit-without-separator", Severity.ERROR, kinds=_SHELL, fixable=True)
def ray_job_submit_without_separator(ctx):
    """Ray job submission (`ray job submit`) without `--` before the entrypoint.

    ## What it does
    Reports `ray job submit ... python3 -m ...` where no standalone `--` separates ray's options from the
    command to run.

    ## Why it matters
    Without `--`, ray's option parser reads the training flags as its own: it stops with `No such option` on the
    first one, or worse, takes one it knows (`--address`, `--working-dir`) as an option of the submission.

    ## Example
    ```bash
    ray job submit --address=http://127.0.0.1:8265 python3 -m openrlhf.cli.train_ppo_ray --pretrain m
    ```

    ## Fix
    `--` is inserted before the entrypoint.

    ## References
    - https://docs.ray.io/en/latest/cluster/running-applications/job-submission/cli.html
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.11.0/examples/scripts/train_ppo_with_reward_fn.sh
    """
    script = _script(ctx)
    if script is None:
        return
    for simple in script.simple_commands:
        if simple.path != ctx.source.path:
            continue
        entry, is_ray = _ray_entry(simple.words)
        if not is_ray or entry is None:
            continue
        rest = simple.words[simple.words.index(entry) + 1 :]
        flags = any(w.known and w.text.startswith("-") for w in rest)
        fix = None
        if entry.path == ctx.source.path and entry.origin_span is None \
                and ctx.source.span_text(entry.span) == entry.text:
            fix = Fix("insert `--` before the entrypoint", (Edit.insert(entry.span.start, "-- "),), Applicability.SAFE)
        yield Finding(entry.span, "`ray job submit` needs `--` before the entrypoint"
                      + (": ray would read the training flags as its own options" if flags else ""),
                      fix=fix, severity=None if flags else Severity.WARNING)


def _unquoted_glob(token: str) -> bool:
    """Whether a token as written has a glob character outside quotes and not escaped."""
    i, quote, plain = 0, "", []
    while i < len(token):
        ch = token[i]
        if quote:
            if ch == quote:
                quote = ""
            elif quote == '"' and ch == "\\":
                i += 1
            i += 1
            plain.append(" ")
            continue
        if ch in ("'", '"'):
            quote = ch
            plain.append(" ")
        elif ch == "\\":
            i += 1
            plain.append(" ")
        elif ch == "$":
            return False  # an expansion in the token: too complex to judge by text
        else:
            plain.append(ch)
        i += 1
    return _has_glob("".join(plain))


@rule("S005", "unquoted-glob-in-value", Severity.WARNING, kinds=_SHELL, fixable=True)
def unquoted_glob_in_value(ctx):
    """A flag value with an unquoted `*`, `?` or `[...]`, which bash replaces with matching file names.

    ## What it does
    Reports values of launch flags that contain glob characters bash expands: written unquoted in the command or
    an array, or anywhere in a heredoc body expanded as `$cmd` (quotes there do not protect).

    ## Why it matters
    The value the program receives depends on the files in the directory the job starts in: `--include *.json`
    becomes a list of file names, or stays a pattern when nothing matches. Jobs then behave differently per node.

    ## Example
    ```bash
    python train.py --data_glob data/*.parquet
    ```

    ## Fix
    The value is put in single quotes (outside heredocs). In a heredoc, pass the value through a quoted
    variable instead.

    ## References
    - https://www.gnu.org/software/bash/manual/bash.html#Filename-Expansion
    """
    from rlhf_lint.fixers.shell import shell_quote

    text = ctx.source.text
    seen: set[tuple[int, int]] = set()
    for command in _commands(ctx):
        for arg in command.launcher_args + command.args:
            for word in arg.values:
                if not word.known or word.path != ctx.source.path or (word.span.start, word.span.end) in seen:
                    continue
                in_heredoc = command.heredoc_span is not None and word.span.start in command.heredoc_span
                written = text[word.span.start : word.span.end]
                if in_heredoc:
                    if not _has_glob(word.text):
                        continue
                    fix = None
                elif word.origin_span is None and written and _unquoted_glob(written) and "$" not in written:
                    fix = None
                    if "'" not in written and '"' not in written and "\\" not in written:
                        fix = Fix("quote the value", (Edit.replace(word.span, shell_quote(word.text)),),
                                  Applicability.SAFE)
                else:
                    continue
                seen.add((word.span.start, word.span.end))
                yield Finding(word.span, f"`{word.text}` (value of `{arg.flag}`) has unquoted glob characters: bash "
                                         f"replaces it with matching file names"
                                         + (" (quotes inside a heredoc do not prevent it)" if in_heredoc else ""),
                              fix=fix)


@rule("S006", "heredoc-quoted-value", Severity.ERROR, kinds=_SHELL, fixable=True)
def heredoc_quoted_value(ctx):
    """Quotes inside a `read -d '' cmd <<EOF` body reach the program as characters, and do not group words.

    ## What it does
    Reports arguments of a command built from a heredoc variable (`deepspeed --module $training_commands`) that
    contain quote characters. Bash expands `$training_commands` unquoted: the text is split on blanks and the
    quotes are not removed.

    ## Why it matters
    `--input_template "User: {}"` arrives as two arguments, `"User:` and `{}"`: argparse stops with
    `unrecognized arguments`, or the template silently contains quote characters. `--save_path "./ckpt"` saves
    to a directory literally named `"`.

    ## Example
    ```bash
    read -r -d '' training_commands <<EOF
    openrlhf.cli.train_sft \\
       --input_template "User: {}"
    EOF
    deepspeed --module $training_commands
    ```

    ## Fix
    Quotes around a value without blanks are removed (safe). A value with blanks cannot be passed this way:
    move that flag out of the heredoc into the command line, quoted there.

    ## References
    - https://www.gnu.org/software/bash/manual/bash.html#Word-Splitting
    - https://github.com/OpenRLHF/OpenRLHF/blob/v0.9.5/examples/scripts/train_rejection_sampling_llama.sh
    """
    text = ctx.source.text
    seen: set[int] = set()
    for command in _commands(ctx):
        for arg in command.args:
            quoted = [v for v in arg.values if v.literal_quotes and v.path == ctx.source.path]
            if not quoted or quoted[0].span.start in seen:
                continue
            seen.add(quoted[0].span.start)
            span = Span(quoted[0].span.start, quoted[-1].span.end)
            shown = " ".join(f"`{v.text}`" for v in quoted)
            fix = None
            if len(quoted) == 1:
                word = quoted[0]
                written = text[word.span.start : word.span.end]
                inner = written[1:-1]
                if written == word.text and len(written) > 2 and written[0] == written[-1] and written[0] in "'\"" \
                        and not re.search(r"[\s'\"\\$`*?\[]", inner):
                    fix = Fix("remove the quotes", (Edit.replace(word.span, inner),), Applicability.SAFE)
                message = f"`{arg.flag}` receives {shown} with the quote characters: quotes are not removed when " \
                          f"a heredoc variable is expanded"
            else:
                message = f"`{arg.flag}` receives {len(quoted)} separate arguments {shown}: the heredoc variable is " \
                          f"split on blanks and its quotes are kept"
            yield Finding(span, message, fix=fix)
