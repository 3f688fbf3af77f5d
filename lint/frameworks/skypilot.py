"""SkyPilot task YAML (`sky launch task.yaml`): its `run` script is the launch and its `resources.accelerators` and
`num_nodes` the hardware the launch asks for (https://docs.skypilot.co/en/latest/reference/yaml-spec.html).

The `run` block is read as a shell script in place: every character of the file outside the block's lines is
blanked (newlines kept), so offsets, lines and columns of the shell view are those of the YAML file and findings
point into it. Only a literal block (`run: |`) or a one-line value is read: a folded block (`>`) joins its lines.
The accelerators act as the script's own `# rlhf-lint: hardware` comment would: over the configuration file, under
the command line."""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rlhf_lint.readers.source import Source

from rlhf_lint.frameworks.jobs import Job, job_builder

TASK_KEYS = frozenset({"resources", "num_nodes", "setup", "envs", "file_mounts", "workdir"})
MAX_RUN_BYTES = 64 << 10  # as a launch script's


@job_builder(kinds={"yaml"})
def build_skypilot_jobs(source: "Source", project) -> list[Job]:
    import yaml

    docs = source.tree if isinstance(source.tree, list) else []
    if not docs or not isinstance(docs[0], yaml.MappingNode):
        return []
    top = {k.value: v for k, v in docs[0].value if isinstance(k, yaml.ScalarNode)}
    run = top.get("run")
    if not isinstance(run, yaml.ScalarNode) or not TASK_KEYS & set(top) or run.style not in ("|", None, "", '"', "'"):
        return []
    hardware, notes = task_hardware(top)
    shell = _shell_view(source, run, task_env(top, hardware), hardware)
    if shell is None:
        return []
    from rlhf_lint.frameworks.launchers import build_shell_jobs

    jobs = build_shell_jobs(shell, project)
    for job in jobs:
        job.assumptions.extend(notes)
    return jobs


def task_env(top: dict, hardware: dict) -> dict:
    """The variables the run script starts with: the task's `envs` (each at its value in the YAML when written
    plainly) and the SKYPILOT_NUM_NODES / SKYPILOT_NUM_GPUS_PER_NODE SkyPilot sets from the task
    (https://docs.skypilot.co/en/latest/running-jobs/environment-variables.html)."""
    import yaml

    from rlhf_lint.readers.yaml import node_span

    out: dict = {}
    envs = top.get("envs")
    if isinstance(envs, yaml.MappingNode):
        for k, v in envs.value:
            if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode) and v.value not in ("", "null", "~"):
                out[k.value] = (v.value, node_span(v) if v.style in (None, "") else None)
    out["SKYPILOT_NUM_NODES"] = (hardware.get("nodes", "1"), None)
    if "gpus-per-node" in hardware:
        out["SKYPILOT_NUM_GPUS_PER_NODE"] = (hardware["gpus-per-node"], None)
    return out


def _shell_view(source: "Source", run, env: dict, hardware: dict) -> "Source | None":
    """The file with everything but the `run` block's text blanked: a shell Source with the YAML file's offsets."""
    from rlhf_lint.model import ParseError
    from rlhf_lint.readers.shell import parse_shell_source
    from rlhf_lint.readers.source import Source

    text = source.text
    start, end = run.start_mark.index, run.end_mark.index
    if run.style == "|":
        start = text.find("\n", start) + 1  # the block's lines start after the `|` indicator's line
        if start <= 0:
            return None
    elif run.style in ('"', "'"):
        start, end = start + 1, end - 1  # inside the quotes; a quoted one-liner with escapes is read as written
    if end - start > MAX_RUN_BYTES:
        return None  # the bound of a launch script (engine.project MAX_PARSE_BYTES["shell"])
    kept = "".join(c if c == "\n" or start <= i < end else " " for i, c in enumerate(text))
    shell = Source.from_bytes(source.path, kept.encode("utf-8"), kind="shell")
    shell.shell_env, shell.shell_hardware = env, hardware
    try:
        shell.tree = parse_shell_source(shell)
    except ParseError:
        return None  # a run script bash would refuse: nothing is launched
    return shell


def task_hardware(top: dict) -> tuple[dict, list[str]]:
    """(hardware dict as a `# rlhf-lint: hardware` comment gives it, notes) from resources.accelerators and
    num_nodes: `H100:8` is 8 H100 per node; a set of candidates keeps only what they agree on. The GPU name is
    checked where a comment's is (an unknown one is M008's to report)."""
    import yaml

    out: dict = {}
    notes: list[str] = []
    nodes = top.get("num_nodes")
    if isinstance(nodes, yaml.ScalarNode) and nodes.value.isdigit() and int(nodes.value) > 0:
        out["nodes"] = nodes.value
    resources = top.get("resources")
    accel = None
    if isinstance(resources, yaml.MappingNode):
        accel = next((v for k, v in resources.value if isinstance(k, yaml.ScalarNode) and k.value == "accelerators"),
                     None)
    candidates = _candidates(accel)
    if not candidates:
        return out, notes
    names = {name for name, _ in candidates}
    counts = {count for _, count in candidates}
    if len(counts) == 1:
        out["gpus-per-node"] = str(counts.pop())
    if len(names) == 1:
        out["gpu"] = names.pop()
    else:
        notes.append(f"SkyPilot accelerators {', '.join(sorted(names))}: any of them, so no one GPU's memory")
    if out:
        notes.append("hardware from the SkyPilot task (resources.accelerators, num_nodes): "
                     + " ".join(f"{k}={v}" for k, v in out.items()))
    return out, notes


def _candidates(node) -> list[tuple[str, int]]:
    """(name, count) of `accelerators`: `H100:8`, `H100`, `{H100: 8, A100-80GB: 8}`, `[H100:8, A100:8]`."""
    import yaml

    if isinstance(node, yaml.ScalarNode):
        return [c for c in (_one(node.value),) if c is not None]
    if isinstance(node, yaml.SequenceNode):
        return [c for c in (_one(n.value) for n in node.value if isinstance(n, yaml.ScalarNode)) if c is not None]
    if isinstance(node, yaml.MappingNode):
        out = []
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode):
                count = v.value if v.value not in ("", "null", "~") else "1"
                found = _one(f"{k.value}:{count}")
                if found is not None:
                    out.append(found)
        return out
    return []


def _one(text: str) -> tuple[str, int] | None:
    name, _, count = str(text).strip().partition(":")
    count = count.strip() or "1"
    if not name.strip() or not count.isdigit() or int(count) < 1:
        return None  # a fractional share (`T4:0.5`) or no name: nothing to read
    return name.strip(), int(count)
