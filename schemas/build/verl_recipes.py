"""verl recipe entry points per release (schemas/verl/recipes.json), read from git: ``recipe/`` of the verl
repository at each release tag (0.3 to 0.7.0), then the verl-recipe repository at the commit the release's
``recipe`` submodule points to (0.7.1 on). Nothing is imported or run: each recipe module's ``@hydra.main(...)``
decorator is read from its syntax tree, and the YAML it names is flattened (its ``defaults`` list followed to the
trainer config it composes: ``ppo_trainer`` or ``ppo_megatron_trainer``).

A row says, for ``python -m recipe.<name>.<module>``, which config it composes and the keys that config adds to, or
sets in, the trainer config; ``rollout_pool`` marks recipes whose rollout runs on GPUs of its own (a top-level
``rollout.n_gpus_per_node``: one_step_off_policy, fully_async_policy), not inside the trainer's workers.
``validates`` says whether the recipe runs verl's start-up checks: up to 0.5 ``RayPPOTrainer.__init__`` calls
``self._validate_config()``, so every recipe whose trainer subclasses it does; from 0.6 on only ``main_ppo.py`` calls
``verl.utils.config.validate_config``, and a recipe runs them only if its own code imports that function.

Run:  python -m rlhf_lint.schemas.build --only verl_recipes --verl-source VERL.git --verl-recipe-source RECIPE.git
"""
from __future__ import annotations

import ast
import json
import os

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "verl")
TABLE = os.path.join(HERE, "recipes.json")
DEFAULTS = os.path.join(HERE, "ppo_trainer_defaults.json")
TRAINER_CONFIGS = ("ppo_trainer", "ppo_megatron_trainer")
VERL_BLOB = "https://github.com/volcengine/verl/blob/v{version}/{path}"
RECIPE_BLOB = "https://github.com/verl-project/verl-recipe/blob/{commit}/{path}"


def hydra_main_of(text: str) -> tuple[str | None, str] | None:
    """(config_path, config_name) of the ``@hydra.main(...)`` decorator of a module's source, else None."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # a hostile file: no entry, not a crash
        return None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            if not isinstance(deco, ast.Call) or not _is_hydra_main(deco.func):
                continue
            words = {k.arg: k.value for k in deco.keywords if k.arg}
            path, name = words.get("config_path"), words.get("config_name")
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                where = path.value if isinstance(path, ast.Constant) and isinstance(path.value, str) else None
                return where, name.value
    return None


def _is_hydra_main(func: ast.AST) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "main" and isinstance(func.value, ast.Name)
            and func.value.id == "hydra")


def defaults_names(tree: dict) -> list[str]:
    """The plain config names of a Hydra ``defaults`` list (``_self_`` and group selections left out)."""
    listed = tree.get("defaults") if isinstance(tree, dict) else None
    return [d for d in listed if isinstance(d, str) and d != "_self_"] if isinstance(listed, list) else []


def trainer_keys(tree: dict) -> dict:
    """A recipe config flattened as the trainer table is, without Hydra's own keys (its defaults list and search
    path)."""
    from rlhf_lint.schemas.build.verl import flatten

    return flatten({k: v for k, v in tree.items() if k not in ("defaults", "hydra")})


def compose(configs: dict[str, dict], name: str, depth: int = 0) -> tuple[str | None, dict]:
    """(trainer config at the root of ``name``'s defaults chain, the keys the chain adds or sets), following
    configs of the same folder; (None, keys) when the chain does not reach a trainer config."""
    tree = configs.get(name)
    if not isinstance(tree, dict) or depth > 8:
        return None, {}
    base, keys = None, {}
    for parent in defaults_names(tree):
        if parent in TRAINER_CONFIGS:
            base = base or parent
        elif parent in configs:
            found, inherited = compose(configs, parent, depth + 1)
            base = base or found
            keys.update(inherited)
    keys.update(trainer_keys(tree))
    return base, keys


def _resolve_gitdir(path: str) -> str:
    """A bare repository, or a checkout whose .git holds it."""
    inner = os.path.join(path, ".git")
    return inner if os.path.isdir(inner) else path


def validates(folder_code: str, trainer_validates: bool) -> bool:
    """Whether a recipe's code runs verl's start-up checks (see the module's docstring)."""
    return "import validate_config" in folder_code or (trainer_validates and "RayPPOTrainer" in folder_code)


def recipes_at(gitdir: str, ref: str, prefix: str, blob, trainer_validates: bool) -> dict:
    """{entry module: row} of the recipes under ``prefix`` (``recipe/`` or the recipe repository's root) at ``ref``."""
    import yaml

    from rlhf_lint.schemas.build.upstream import git

    def show(rel: str) -> str:
        return git(gitdir, "show", f"{ref}:{prefix}{rel}")

    names = git(gitdir, "ls-tree", "-r", "--name-only", ref, "--", prefix or ".").splitlines()
    by_folder: dict[str, list[str]] = {}
    for n in names:
        rel = n[len(prefix):] if prefix else n
        parts = rel.split("/")
        if len(parts) >= 2:
            by_folder.setdefault(parts[0], []).append(rel)
    configs_of: dict[str, dict] = {}  # config folder -> {name: parsed YAML}, read once for all its modules

    def configs_in(config_dir: str, files: list[str]) -> dict:
        if config_dir not in configs_of:
            configs = configs_of[config_dir] = {}
            for f in files:
                if f.startswith(config_dir + "/") and f.endswith(".yaml") and f.count("/") == config_dir.count("/") + 1:
                    try:
                        configs[os.path.basename(f)[:-5]] = yaml.safe_load(show(f))
                    except yaml.YAMLError:
                        continue
        return configs_of[config_dir]

    rows = {}
    for folder, files in sorted(by_folder.items()):
        code = None  # the folder's Python, read once when a module of it is a recipe
        for module in sorted(f for f in files if f.count("/") == 1 and f.endswith(".py")):
            found = hydra_main_of(show(module))
            if found is None or found[0] is None:
                continue
            config_dir = os.path.normpath(os.path.join(folder, found[0])).replace(os.sep, "/")
            configs = configs_in(config_dir, files)
            if found[1] not in configs:
                continue
            if code is None:
                code = "".join(show(f) for f in files if f.endswith(".py"))
            row = {"config_name": found[1], "entry_source": blob(prefix + module),
                   "validates": validates(code, trainer_validates)}
            # every config of the folder that composes a trainer config: `--config-name x` picks another one
            for name in sorted(configs):
                base, keys = compose(configs, name)
                if base is None:
                    continue
                row.setdefault("configs", {})[name] = {
                    "base": base, "source": blob(f"{prefix}{config_dir}/{name}.yaml"), "keys": keys,
                    "rollout_pool": "rollout.n_gpus_per_node" in keys}
            if found[1] in row.get("configs", {}):
                rows["recipe." + module[:-3].replace("/", ".")] = row
    return rows


def refresh(verl_git: str, recipe_git: str | None, releases: list[str] | None, log=print) -> dict:
    if not verl_git:
        raise ValueError("no --verl-source git directory")
    verl_git = _resolve_gitdir(verl_git)
    recipe_git = _resolve_gitdir(recipe_git) if recipe_git else None
    with open(DEFAULTS, encoding="utf-8") as fh:
        wanted = releases or [r for r in json.load(fh)["releases"] if r != "main"]
    from rlhf_lint.schemas.build.upstream import git

    tags = set(git(verl_git, "tag").split())
    table = {"note": "verl recipe entry points (python -m recipe.<name>.<module>): the Hydra config each composes "
                     "and the keys it adds to the trainer config, per verl release; built by "
                     "schemas/build/verl_recipes.py from git (recipe/ in the verl repository up to 0.7.0, then the "
                     "verl-recipe commit of the release's recipe submodule)",
             "releases": {}}
    summary = {"table": "verl/recipes.json", "added": 0, "closed": 0, "releases": []}
    for version in wanted:
        tag = f"v{version}"
        if tag not in tags:
            log(f"  verl {version}: no tag {tag} in {verl_git}; skipped")
            continue
        tree = git(verl_git, "ls-tree", tag, "recipe").split()
        if not tree:
            continue  # no recipes in this release
        trainer = git(verl_git, "show", f"{tag}:verl/trainer/ppo/ray_trainer.py")
        checks = "self._validate_config()" in trainer
        if tree[1] == "commit":  # a submodule: the verl-recipe repository at that commit
            if recipe_git is None:
                log(f"  verl {version}: recipes are a submodule; no --verl-recipe-source given, skipped")
                continue
            commit = tree[2]
            rows = recipes_at(recipe_git, commit, "", lambda p, c=commit: RECIPE_BLOB.format(commit=c, path=p), checks)
            where = {"recipe_commit": commit}
        else:
            rows = recipes_at(verl_git, tag, "recipe/", lambda p, v=version: VERL_BLOB.format(version=v, path=p),
                              checks)
            where = {}
        if rows:
            table["releases"][version] = {**where, "trainer_validates": checks, "entries": rows}
            summary["added"] += len(rows)
            summary["releases"].append(version)
    with open(TABLE, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(table, fh, indent=0, ensure_ascii=False, sort_keys=False)
        fh.write("\n")
    return summary
