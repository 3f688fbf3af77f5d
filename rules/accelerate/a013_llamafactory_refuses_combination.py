"""A013 llamafactory-refuses-combination."""
from __future__ import annotations

from rlhf_lint.model import Finding, Related, Severity
from rlhf_lint.engine.registry import rule
from rlhf_lint.rules.accelerate._common import here, package_version, world_size, zero_stage


@rule("A013", "llamafactory-refuses-combination", Severity.ERROR, kinds=(), scope="job", frameworks=("llamafactory",))
def llamafactory_refuses_combination(ctx):
    """LLaMA-Factory's argument parser refuses the combination at start-up (schemas/hf/llamafactory_checks.json).

    ## What it does
    Reports a `llamafactory-cli train` launch whose settings match a row of the table of combinations
    `get_train_args` refuses: layer-wise GaLore or APOLLO with more than one process, BAdam's ratio mode with more
    than one process, layer-wise BAdam with more than one process but without ZeRO-3, GaLore or APOLLO with
    DeepSpeed, `pure_bf16` with ZeRO-3 (and the earlier releases' variants). "More than one process" needs the
    launch's world size (`FORCE_TORCHRUN=1 NPROC_PER_NODE=8`, `NNODES`): a recipe no launch runs gets no finding,
    a world size only the configuration gives a warning. The finding is an error for the LLaMA-Factory release
    configured or pinned (`llamafactory` in requirements) when that release refuses it; with no release known, an
    error only when every release the table covers refuses it, else a warning naming the releases that do; beyond
    the newest release read, a warning that says so.

    ## Why it matters
    `ValueError` from `hparams/parser.py` once the job is scheduled, before the model loads.

    ## Example
    `FORCE_TORCHRUN=1 NPROC_PER_NODE=8 llamafactory-cli train galore.yaml` with `use_galore: true` and
    `galore_layerwise: true`.

    ## Fix
    Train on one process, drop the layer-wise option or the DeepSpeed config, switch BAdam to layer mode under
    ZeRO-3, or drop `pure_bf16` under ZeRO-3 (bf16 mixed precision instead).

    ## References
    https://github.com/hiyouga/LLaMA-Factory/blob/ff6d4d12/src/llamafactory/hparams/parser.py#L498-L519
    """
    from rlhf_lint.frameworks.deepspeed import row_at, version_tuple
    from rlhf_lint.schemas import load

    table = load("hf/llamafactory_checks.json")
    first, last = version_tuple(table["covers"]["from"]), version_tuple(table["covers"]["to"])
    version, note = package_version(ctx, "llamafactory")
    if version is None:
        version, cli_note = package_version(ctx, "llamafactory-cli")
        note = cli_note if version is not None else note
    if version is not None and version < first:
        return
    facts = _Facts(ctx)
    matched: dict[str, list] = {}
    for row in table["rows"]:
        hit = facts.match(row)
        if hit is not None:
            matched.setdefault(row["check"], []).append((row, hit))
    for check, rows in matched.items():
        if version is not None:
            row = row_at([r for r, _h in rows], version)
            if row is None:
                continue
            setting, assumed = next(h for r, h in rows if r is row)
            severity, why = None, note
            if version > last:
                severity = Severity.WARNING
                why += f"; the releases read end at {table['covers']['to']}, where it is refused"
        else:
            row, (setting, assumed) = max(rows, key=lambda rh: version_tuple(rh[0]["since"]))
            spans = sorted(((version_tuple(r["since"]), r["until"]) for r, _h in rows), key=lambda p: p[0])
            severity, why = None, f"{note}: every release from {table['covers']['from']} refuses it"
            if not _covers_all(spans, first, version_tuple):
                severity = Severity.WARNING
                why = f"{note}: refused by LLaMA-Factory {_releases((r for r, _h in rows), version_tuple)}"
        if assumed:
            severity = Severity.WARNING
            why += f"; with {assumed}"
        related = ()
        if facts.stage_s is not None and facts.stage_s.path is not None and "zero3" in row["when"]:
            related = (Related(facts.stage_s.path, facts.stage_s.span, f"ZeRO stage {facts.stage} here"),)
        span, path = here(ctx, setting)
        yield Finding(span, f"LLaMA-Factory refuses this at start-up: \"{row['message']}\" ({why})",
                      related=related, severity=severity, path=path)


class _Facts:
    """What the rows ask about the job: settings, more than one process, DeepSpeed, ZeRO-3 (None: unknown)."""

    def __init__(self, ctx):
        job = ctx.job
        self.job = job
        n, _s, assumed = world_size(ctx)
        self.distributed = None if n is None else n > 1
        self.world_note = f"world size {n} from the configuration, not the launch" if assumed else ""
        ds = job.settings.get("deepspeed.config_path")
        self.deepspeed = ds is not None and isinstance(ds.value, str) and bool(ds.value)
        self.stage, self.stage_s = zero_stage(ctx)
        if type(self.stage) is int:
            self.zero3 = self.stage == 3
        else:
            self.zero3 = None if self.deepspeed or job.settings.get("accelerate.config_path") is not None else False

    def match(self, row: dict):
        """(the setting to point at, what was assumed) when the row's condition holds, else None."""
        when = row["when"]
        found = {}
        for key, values in when.get("settings", {}).items():
            s = next((s for s in reversed(self.job.settings.all(key)) if s.value in values
                      and type(s.value) is type(values[0])
                      and not (s.origin or "").startswith(when.get("not_origin") or "\0")), None)
            if s is None:
                return None
            found[key] = s
        assumed = ""
        if "distributed" in when:
            if self.distributed is None or self.distributed != when["distributed"]:
                return None
            assumed = self.world_note
        if "deepspeed" in when and self.deepspeed != when["deepspeed"]:
            return None
        if "zero3" in when and (self.zero3 is None or self.zero3 != when["zero3"]):
            return None
        return found[row["at"]], assumed


def _covers_all(spans, first, version_tuple) -> bool:
    """Whether rows (since, until) join up from the table's first release to the newest (until null)."""
    reach = first
    for since, until in spans:
        if since > reach:
            return False
        if until is None:
            return True
        reach = max(reach, version_tuple(until))
    return False


def _releases(rows, version_tuple) -> str:
    return ", ".join(f"{r['since']} and later" if r["until"] is None else f"{r['since']} to {r['until']} (exclusive)"
                     for r in sorted(rows, key=lambda r: version_tuple(r["since"])))
