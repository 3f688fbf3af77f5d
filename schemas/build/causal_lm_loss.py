"""Which of transformers' causal LMs compute their training loss on fp32 logits, per release and model_type.

A causal LM's ``forward(labels=...)`` either upcasts the LM head's output to fp32 before the cross entropy
(``logits = logits.float()``, ``.to(torch.float32)``, or ``self.loss_function``, whose ForCausalLMLoss upcasts), or
hands its 16-bit logits to CrossEntropyLoss as they are. Without autocast (DeepSpeed: accelerate turns native AMP off
for it) the second keeps the log-softmax and its gradients in 16 bits: half the loss's bytes per logit. Read from
each release wheel with ``ast`` (nothing imported or run): every ``*ForCausalLM`` / ``*LMHeadModel`` class of
``transformers/models/<model_type>/modeling_*.py`` whose ``forward`` computes a cross entropy. Output:
schemas/hf/causal_lm_loss.json, per model_type the release ranges (newest patch of each minor series from 4.30)
with the path ``fp32`` or ``logits_dtype``.

    python -m rlhf_lint.schemas.build --only causal_lm_loss [--releases 4.46.3,4.50.3]
"""
from __future__ import annotations

import ast
import json
import os
import re

from packaging.version import Version

from rlhf_lint.schemas.build.upstream import newest_patches

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(HERE, "hf", "causal_lm_loss.json")
ATTENTION_TABLE = os.path.join(HERE, "hf", "attention_default.json")
SDPA_DEFAULT_SINCE = "4.36"  # _autoset_attn_implementation picks sdpa for a model that supports it
OLDEST = (4, 30)
MODELING = re.compile(r"transformers/models/([a-z0-9_]+)/modeling_[a-z0-9_]+\.py")
LOSS_UTILS = "transformers/loss/loss_utils.py"
BLOB = "https://github.com/huggingface/transformers/blob/v{version}/src/{path}"
# hand-read: model code on the hub (trust_remote_code), not in any wheel
REMOTE_CODE = {
    "qwen": {"path": "logits_dtype",
             "source": "https://huggingface.co/Qwen/Qwen-7B/blob/main/modeling_qwen.py (QWenLMHeadModel.forward: "
                       "lm_logits = self.lm_head(hidden_states), then CrossEntropyLoss on its shifted copy, no "
                       "upcast); read in the copy https://github.com/undefdev/Qwen-7B-Chat/blob/"
                       "04df5dd57b94b9ed20498ee42063ea9e164f98b3/modeling_qwen.py"},
    "baichuan": {"path": "logits_dtype",
                 "source": "https://huggingface.co/baichuan-inc/Baichuan2-13B-Chat/blob/main/modeling_baichuan.py "
                           "(BaichuanForCausalLM.forward: logits = self.lm_head(hidden_states), CrossEntropyLoss on "
                           "the shifted logits plus a z-loss of their row maxima, no upcast); read in the copies "
                           "https://github.com/jrd77/Baichuan2-13B-Chat/blob/35e3d5af948ecfe718bbb31633f053ae2a063725/"
                           "modeling_baichuan.py and, for Baichuan-13B (the same model_type), https://github.com/"
                           "MrInouye/baichuan-13b-chat-batch/blob/3d41c0c70e6fbc86f84aa9ba3d0838e5e3e049fa/"
                           "modeling_baichuan.py"},
}


def _is_logits(node: ast.AST) -> bool:
    text = ast.unparse(node)
    return "logit" in text or "lm_head" in text


def _to_fp32(call: ast.Call) -> bool:
    values = list(call.args) + [k.value for k in call.keywords]
    return any(ast.unparse(v) in ("torch.float32", "torch.float") for v in values)


def forward_loss(fn: ast.FunctionDef, loss_function_upcasts: bool) -> str | None:
    """"fp32" or "logits_dtype" for a forward that computes a cross entropy; None for one that computes none."""
    loss = upcast = False
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        func = ast.unparse(node.func)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "loss_function":
            loss = True
            upcast = upcast or loss_function_upcasts
        elif "CrossEntropyLoss" in func or func.endswith("cross_entropy"):
            loss = True
        elif isinstance(node.func, ast.Attribute) and _is_logits(node.func.value) and (
                node.func.attr == "float" or (node.func.attr == "to" and _to_fp32(node))):
            upcast = True
    if not loss:
        return None
    return "fp32" if upcast else "logits_dtype"


def loss_function_upcasts(text: str | None) -> bool:
    """Whether loss_utils.ForCausalLMLoss upcasts its logits (``logits = logits.float()``)."""
    tree = parse_module(text) if text is not None else None
    for node in tree.body if tree is not None else []:
        if isinstance(node, ast.FunctionDef) and node.name == "ForCausalLMLoss":
            return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "float"
                       and _is_logits(n.func.value) for n in ast.walk(node))
    return False


def parse_module(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def modeling_paths(tree: ast.Module | None, upcasts: bool) -> list[tuple[str, str]]:
    """(class, path) of each causal-LM class of one modeling file whose forward computes a loss."""
    out = []
    for node in tree.body if tree is not None else []:
        if isinstance(node, ast.ClassDef) and node.name.endswith(("ForCausalLM", "LMHeadModel")) \
                and not node.name.startswith(("TF", "Flax")):
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                    path = forward_loss(fn, upcasts)
                    if path is not None:
                        out.append((node.name, path))
    return out


def supports_sdpa(tree: ast.Module | None) -> str | None:
    """The class of a modeling file that sets ``_supports_sdpa = True``, or None."""
    for node in tree.body if tree is not None else []:
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == "_supports_sdpa" for t in stmt.targets) \
                        and isinstance(stmt.value, ast.Constant) and stmt.value.value is True:
                    return node.name
    return None


def release_tables(release) -> tuple[dict, dict]:
    """Two {model_type: (value, class, file)} maps of one release, each modeling file parsed once: the loss path
    (a model_type with several causal LMs takes the 16-bit path if any of them has it: the estimate must not count
    fp32 logits a model never makes), and the attention transformers picks when the launch names none (sdpa from
    4.36 for a model whose code supports it, else eager)."""
    names = release.names()
    upcasts = loss_function_upcasts(release.read(LOSS_UTILS) if LOSS_UTILS in names else None)
    sdpa_default = Version(release.version).release[:2] >= Version(SDPA_DEFAULT_SINCE).release
    paths: dict[str, tuple[str, str, str]] = {}
    attention: dict[str, tuple[str, str, str]] = {}
    for name in names:
        m = MODELING.fullmatch(name)
        if not m:
            continue
        model_type, tree = m.group(1), parse_module(release.read(name))
        for cls, path in modeling_paths(tree, upcasts):
            if model_type not in paths or path == "logits_dtype":
                paths[model_type] = (path, cls, name)
        cls = supports_sdpa(tree) if sdpa_default else None
        if cls is not None or model_type not in attention:
            attention[model_type] = ("sdpa" if cls else "eager", cls or "", name)
    return paths, {t: v for t, v in attention.items() if t in paths}  # causal LMs only


def ranges(per_release: list[tuple[str, dict]], field: str = "path",
           what: str = "{cls}.forward") -> dict[str, list[dict]]:
    """Rows {since, until, <field>, source} per model_type: since is the minor series of the first release read
    with the value, until that of the first without it (None: the newest read still has it)."""
    table: dict[str, list[dict]] = {}
    for version, paths in per_release:
        minor = ".".join(version.split(".")[:2])
        for model_type in set(table) | set(paths):
            rows = table.setdefault(model_type, [])
            now = paths.get(model_type)
            last = rows[-1] if rows else None
            if last is not None and last["until"] is None and (now is None or now[0] != last[field]):
                last["until"] = minor
            if now is not None and (last is None or last["until"] is not None):
                value, cls, file = now
                rows.append({"since": minor, "until": None, field: value,
                             "source": BLOB.format(version=version, path=file)
                             + (f" ({what.format(cls=cls)})" if cls else "")})
    return table


def refresh(cache, versions: list[str] | None = None, log=print) -> dict:
    from rlhf_lint.schemas.build.upstream import index_versions

    if not versions:
        listed = cache.cached_versions("transformers") if cache.offline else index_versions("transformers")
        versions = newest_patches(listed, OLDEST)
    per_release, attention = [], []
    for version in versions:
        log(f"  transformers {version}")
        paths, defaults = release_tables(cache.release("transformers", version, "wheel"))
        per_release.append((version, paths))
        attention.append((version, defaults))
    data = {
        "note": "Whether a causal LM's forward(labels=...) computes its cross entropy on fp32 logits ('fp32': an "
                "upcast in the forward or loss_utils.ForCausalLMLoss) or on the LM head's own 16-bit output "
                "('logits_dtype'), per model_type and transformers release (since: first minor series read with "
                "the path, until: first without it, exclusive; before the oldest read, unknown). Built by "
                "python -m rlhf_lint.schemas.build --only causal_lm_loss from the release wheels; remote_code: "
                "model code on the hub, read by hand.",
        "releases": versions,
        "model_types": dict(sorted(ranges(per_release).items())),
        "remote_code": REMOTE_CODE,
    }
    with open(TABLE, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(data, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    attention_data = {
        "note": "The attention a causal LM runs when the launch names no attn_implementation, per model_type and "
                "transformers release: before 4.36 eager for every model; from 4.36 transformers' "
                "_autoset_attn_implementation picks sdpa for a model whose modeling file sets _supports_sdpa = True, "
                "else eager (which saves the seq x seq scores). Built with causal_lm_loss.json.",
        "sdpa_default_since": SDPA_DEFAULT_SINCE,
        "sdpa_default_source": "https://github.com/huggingface/transformers/blob/v4.36.2/src/transformers/"
                               "modeling_utils.py (_autoset_attn_implementation, _check_and_enable_sdpa)",
        "releases": versions,
        "model_types": dict(sorted(ranges(attention, "attention", "{cls}._supports_sdpa").items())),
    }
    with open(ATTENTION_TABLE, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(attention_data, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    sixteen = sorted(t for t, rows in data["model_types"].items() if any(r["path"] == "logits_dtype" for r in rows))
    return {"table": "hf/causal_lm_loss.json", "added": sum(len(r) for r in data["model_types"].values()),
            "releases": [f"transformers {v}" for v in versions], "newest": f"transformers {versions[-1]}",
            "sixteen_bit": len(sixteen)}
