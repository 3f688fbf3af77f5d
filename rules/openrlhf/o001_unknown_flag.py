"""O001 unknown-flag."""
from __future__ import annotations

from rlhf_lint.model import Applicability, Edit, Finding, Fix, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.openrlhf._common import SHELL, _invocations, _k, _literal_at


@rule("O001", "unknown-flag", Severity.ERROR, kinds=SHELL, fixable=True)
def unknown_flag(ctx):
    """A flag that the targeted OpenRLHF release does not define: argparse exits before anything starts.

    ## What it does
    Reads every flag of an `openrlhf.cli.*` command against the argparse parser of the OpenRLHF release the script
    targets (the `openrlhf-version` setting, else an `openrlhf==` pin in the project's requirements, else the
    newest release that accepts the flags used) and reports each flag that parser does not know. The message
    names the closest valid flag, the releases that did accept the flag, and a rename when there was one.

    ## Why it matters
    OpenRLHF renamed flags many times (`--flash_attn` → `--attn_implementation` in v0.8.10, `--bf16` →
    `--param_dtype` in v0.9.2) and moved every flag into a dotted namespace in v0.10.2 (`--zero_stage` →
    `--ds.zero_stage`) without aliases. A script written for one release fails with `unrecognized arguments`
    on another, often after a cluster allocation and a container pull.

    ## Example
    ```bash
    # with openrlhf==0.11.0 pinned
    python3 -m openrlhf.cli.train_ppo_ray --zero_stage 3 ...
    ```

    ## Fix
    A one-to-one rename is fixed safely in the direction of the targeted release (`--zero_stage` →
    `--ds.zero_stage` for v0.10.2 and later, the reverse for older releases). Other flags need a person: the
    message names the closest valid flag.

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/commit/ed62d0e2
    - https://github.com/OpenRLHF/OpenRLHF/compare/v0.8.9.post1...v0.8.10
    - https://github.com/OpenRLHF/OpenRLHF/compare/v0.9.1.post1...v0.9.2
    """
    for inv in _invocations(ctx):
        k = inv.k or _k()  # a fork's own flags for openrlhf-source
        valid = k.flags_at(inv.cli, inv.tag)
        for use in inv.uses:
            if use.match != "unknown":
                continue
            yield _unknown_flag_finding(ctx, inv, use, valid, k)


def _unknown_flag_finding(ctx, inv, use, valid, k):
    flag = use.written
    if inv.outside_note:  # a newer (or older) release than the tables cover
        return _past_edge_finding(inv, use, valid, k)
    parts = [f"`{flag}` is not a flag of {inv.cli} in {inv.release_phrase}: argparse exits with "
             f"'unrecognized arguments'"]
    fix = None
    rename = _rename_for(inv, flag, valid, k)
    if rename is not None:
        new_words, applicability, note = rename
        if new_words:
            parts.append(f"{note}: use `{' '.join(new_words)}`")
            if applicability != "display" and _literal_at(ctx.source, use.flag_span, flag):
                fix = Fix(f"replace `{flag}` with `{' '.join(new_words)}`",
                          (Edit.replace(use.flag_span, " ".join(new_words)),),
                          Applicability.SAFE if applicability == "safe" else Applicability.UNSAFE)
        else:
            parts.append(note)
    else:
        import difflib  # only for unknown flags: difflib costs ~1 ms of every start

        close = difflib.get_close_matches(flag, list(valid), n=1, cutoff=0.6)
        if close:
            parts.append(f"did you mean `{close[0]}`?")
    accepted = k.releases_accepting(inv.cli, flag)
    if accepted:
        parts.append(f"`{flag}` was accepted by {k.describe_ranges(accepted)}")
    return Finding(use.flag_span, "; ".join(parts), fix=fix)


def _past_edge_finding(inv, use, valid, k):
    """The flag may be new in a release the tables lack: a warning, no rename (it could point at a removed flag)."""
    import difflib

    flag = use.written
    parts = [f"`{flag}` is not a flag of {inv.cli} in OpenRLHF {inv.version}, but {inv.outside_note}: "
             f"that release may define it"]
    close = difflib.get_close_matches(flag, list(valid), n=1, cutoff=0.6)
    if close:
        parts.append(f"did you mean `{close[0]}`?")
    return Finding(use.flag_span, "; ".join(parts), severity=Severity.WARNING)


def _rename_for(inv, flag, valid, k):
    """(replacement words, applicability, note) when the flag was renamed in the direction of the target."""
    for row in k.renames_of(inv.cli, flag):
        if inv.tag > k.index(row["last_old"]):
            words = row["new"]
            if words and not all(w in valid for w in words if w.startswith("--")):
                continue
            # a comma, not parentheses: notes hold parentheses of their own
            return words, row["applicability"], f"renamed after {row['last_old']}, {row['note']}"
    reverse = k.reverse_rename(inv.cli, flag)
    if reverse is not None and inv.tag <= k.index(reverse["last_old"]) and reverse["old"] in valid:
        return [reverse["old"]], "safe", (f"`{flag}` only exists from v0.10.2; releases up to "
                                          f"{reverse['last_old']} call it `{reverse['old']}`")
    return None
