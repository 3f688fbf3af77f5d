"""Start-up cost of a one-script check (pre-commit runs one process per commit): modules that only some files need
must not be imported when linting a single launch script. The figures are in docs/performance.md; the timing itself
is bench/latency.py (timings do not belong in tests, which modules are loaded does)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

LAUNCH = """#!/bin/bash
ray job submit --address="http://127.0.0.1:8265" \\
   -- python3 -m openrlhf.cli.train_ppo_ray \\
   --ref_num_nodes 1 --ref_num_gpus_per_node 4 \\
   --actor_num_nodes 1 --actor_num_gpus_per_node 8 \\
   --colocate_actor_ref \\
   --pretrain meta-llama/Meta-Llama-3-8B \\
   --reward_pretrain OpenRLHF/Llama-3-8b-rm-mixture \\
   --micro_train_batch_size 2 --train_batch_size 256 \\
   --zero_stage 3 --bf16
"""

PROBE = """
import sys
from rlhf_lint.cli.entry import main
try:
    main(['--no-cache', sys.argv[1]])
except SystemExit as exit:
    code = exit.code
modules = sorted(sys.modules)  # before json is imported to print them
import json
print(json.dumps({'exit': code, 'modules': modules}))
"""

# what each one costs a start on the reference machine (docs/performance.md), and which files do need it
NOT_FOR_ONE_SCRIPT = {
    "packaging.specifiers": "~25 ms with packaging.tags, logging, subprocess, platform; requirements pins only",
    "rlhf_lint.frameworks.versions": "~6 ms; only when some file declares a pin",
    "rlhf_lint.readers.pins": "~1.3 ms; only when some file may declare a pin (a pin file, `pip install` in a script)",
    "typing": "~2 ms; annotations only",
    "pkgutil": "imports typing; the rule modules are listed with os.listdir",
    "importlib.resources": "~7 ms; tree_sitter_bash's __init__ imports it for a query file we never read",
    "difflib": "~1 ms; only to suggest a name for an unknown key or flag",
    "libcst": "Python configs only",
    "jsonschema": "ds_config schema checks only",
    "yaml": "YAML files only",
    "click": "subcommands only; a plain check parses its own command line",
    "logging": "pulled in by packaging.tags",
    "tempfile": "only a fixing run writes files",
    "rlhf_lint.frameworks.verl": "~2 ms; job builder for YAML files and verl jobs only",
    "rlhf_lint.frameworks.orz": "~4 ms; job builder for Python files only",
    "rlhf_lint.frameworks.accelerate": "~1 ms; job builder for YAML files only",
    "rlhf_lint.rules.deepspeed._common": "~5 ms with the JSON parser and ds_config classifier; ds_config files only",
    "rlhf_lint.rules.accelerate._common": "YAML files only",
    "rlhf_lint.rules.verl._common": "verl launches only (its job rules name their framework in the rule index)",
    "rlhf_lint.rules.orz._common": "Python configs and ORZ launches only",
    # rules that declare the fact they need (@rule(when=...)) are not imported without it
    "rlhf_lint.rules.pins": "when='pins': nothing in a lone launch script pins a package",
    "rlhf_lint.rules.files": "when='parse error' / 'unreadable files': the script parses",
    "rlhf_lint.rules.memory.m001_gpu_out_of_memory": "when='gpu': no hardware profile, so no verdict",
    "rlhf_lint.rules.memory.m002_host_out_of_memory": "when='host memory': no host or container limit given",
    "rlhf_lint.engine.cache": "--no-cache",
    "rlhf_lint.readers.json": "JSON files only",
    "dataclasses": "~8 ms with inspect; value types are rlhf_lint.startup.records",
    "inspect": "~6 ms (ast, dis, tokenize); only rule documentation cleans docstrings with it",
    # json is not listed: under --no-cache the knowledge files are parsed from their JSON (nothing is read from the
    # cache folder), and a cached run reads its results entry as JSON
}


def test_one_launch_script_imports_only_what_it_needs(tmp_path):
    script = tmp_path / "train_ppo.sh"
    script.write_text(LAUNCH, encoding="utf-8")
    env = dict(os.environ, RLHF_LINT_CACHE_DIR=str(tmp_path / "cache"))
    for _ in range(2):  # the first run parses the knowledge JSON and caches it; what matters is every later run
        out = subprocess.run([sys.executable, "-c", PROBE, str(script)], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120, env=env)
        assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    modules = set(result["modules"])
    # the check really ran: the colocated actor/ref GPU mismatch is an error (exit 1) found by the OpenRLHF rules
    assert result["exit"] == 1
    assert {"rlhf_lint.rules.openrlhf._common", "rlhf_lint.frameworks.openrlhf", "rlhf_lint.readers.shell"} <= modules
    loaded = {name: why for name, why in NOT_FOR_ONE_SCRIPT.items() if name in modules}
    assert loaded == {}


def test_builder_kinds_table_matches_what_each_module_registers():
    """jobs.BUILDER_KINDS lets a run skip builder modules for kinds it has no files of: a wrong row would silently
    drop the jobs of a kind, so each row must equal the kinds the module's builders register."""
    code = """
import importlib, json
from rlhf_lint.frameworks import jobs
out = {}
for module in list(jobs.BUILDER_MODULES):
    before = len(jobs._BUILDERS)
    importlib.import_module(module)
    out[module] = sorted(set().union(*[kinds for kinds, _ in jobs._BUILDERS[before:]]))
print(json.dumps({'registered': out, 'declared': {m: sorted(k) for m, k in jobs.BUILDER_KINDS.items()}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["registered"] == result["declared"]
    assert set(result["registered"]) >= {"rlhf_lint.frameworks.launchers", "rlhf_lint.frameworks.verl"}


def test_a_ds_config_alone_imports_no_job_builder(tmp_path):
    """json and requirements files build no jobs: no job-builder module (launchers, orz, verl, accelerate) loads;
    with no pin file, neither does the pins reader (the DeepSpeed version is the assumed one)."""
    config = tmp_path / "ds_config.json"
    config.write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 2}}\n', encoding="utf-8")
    env = dict(os.environ, RLHF_LINT_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", PROBE, str(config)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    modules = set(json.loads(out.stdout.strip().splitlines()[-1])["modules"])
    assert "rlhf_lint.rules.deepspeed.d001_unknown_ds_config_key" in modules  # the check ran
    builders = {"rlhf_lint.frameworks.launchers", "rlhf_lint.frameworks.orz", "rlhf_lint.frameworks.verl",
                "rlhf_lint.frameworks.accelerate"}
    assert builders & modules == set()
    assert {"rlhf_lint.readers.pins", "rlhf_lint.frameworks.versions"} & modules == set()  # no file pins DeepSpeed


def test_a_setup_py_is_read_without_libcst(tmp_path):
    """setup.py's pins come from CPython's ast (readers/python.py): importing libcst would cost ~0.3 s of the run
    of every repository that has one."""
    (tmp_path / "setup.py").write_text('from setuptools import setup\nsetup(name="x", install_requires=['
                                       '"deepspeed==0.14.4"])\n', encoding="utf-8")
    env = dict(os.environ, RLHF_LINT_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "setup.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    modules = set(json.loads(out.stdout.strip().splitlines()[-1])["modules"])
    assert "rlhf_lint.readers.pins" in modules  # its pins were read
    assert "libcst" not in modules
