"""A malicious repository cannot make rlhf-lint run code, touch the network, or read outside the repository.

The CLI runs in a child interpreter with an audit hook (PEP 578) that records every process start, socket use,
code execution whose code object comes from a checked file, and every open() of the files outside the repository
that the repository points at. Afterwards no side-effect file may exist and no such event may have happened.
"""
import json
import os
import subprocess
import sys
import textwrap

from lintutil import ROOT

HOOK = textwrap.dedent("""
    import json, os, sys
    events = []
    repo = os.path.realpath(sys.argv[1])
    outside = {os.path.realpath(p) for p in sys.argv[2].split(os.pathsep)}
    FORBIDDEN = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
                 "pty.spawn", "socket.connect", "socket.bind", "socket.getaddrinfo", "socket.gethostbyname",
                 "socket.sendto", "urllib.Request", "ctypes.dlopen", "webbrowser.open", "import_user")

    def hook(event, args):
        if event in FORBIDDEN or event.startswith(("socket.", "http.")):
            events.append([event, repr(args)[:200]])
        elif event == "exec":
            code = args[0]
            filename = getattr(code, "co_filename", "")
            if os.path.isabs(filename) and os.path.realpath(filename).startswith(repo):
                events.append(["exec of a checked file", filename])
        elif event == "import":
            name = args[0] or ""
            if name.split(".")[0] in ("evil_config", "train_exp", "setup", "conftest"):
                events.append(["import of a checked file", name])
        elif event == "open":
            path = args[0]
            if isinstance(path, (str, bytes)) and os.path.realpath(os.fsdecode(path)) in outside:
                events.append(["open outside the repository", os.fsdecode(path)])

    sys.addaudithook(hook)
    from rlhf_lint.cli.entry import main
    try:
        main(["--no-cache", "--unsafe-fixes", "--fix", "--format", "json", "."])
    except SystemExit as exc:
        code = exc.code
    network = sorted(m for m in ("socket", "ssl", "http.client", "urllib.request", "requests", "httpx", "ftplib",
                                 "smtplib", "xmlrpc.client") if m in sys.modules)
    sys.stderr.write("AUDIT " + json.dumps({"events": events, "network_modules": network, "exit": code}) + "\\n")
""")

EVIL_PY = textwrap.dedent("""
    import os
    os.system("touch PWNED_py_system")
    open(os.path.join(os.path.dirname(__file__), "PWNED_py_open"), "w").write("x")
    from dataclasses import dataclass
    from orz.exps.examples.ppo.ppo_base_exp import BasePPOExpConfig

    @dataclass
    class PPOExpConfig(BasePPOExpConfig):
        pretrain: str = __import__("os").popen("touch PWNED_py_default").read()
        zero_stage: int = 3
        total_num_nodes: int = 8
""")

EVIL_YAML = textwrap.dedent("""
    trainer: !!python/object/apply:os.system ["touch PWNED_yaml_system"]
    data: !!python/object/new:subprocess.Popen [["touch", "PWNED_yaml_popen"]]
    actor_rollout_ref:
      model:
        path: !!python/name:os.system
      rollout:
        gpu_memory_utilization: 0.6
""")

EVIL_SH = textwrap.dedent("""\
    #!/bin/bash
    source ../outside/env.sh
    . ../outside/env.sh
    MODEL=$(touch PWNED_sh_subst; echo Qwen/Qwen2.5-7B)
    deepspeed --module openrlhf.cli.train_sft \\
        --pretrain "$MODEL" --save_path `touch PWNED_sh_backtick` \\
        --deepspeed_config ../outside/ds_config.json \\
        --max_len $(curl -s http://example.invalid/len) --zero_stage 3 --bf16 <(touch PWNED_sh_procsub)
    eval "touch PWNED_sh_eval"
""")


def test_malicious_repository_runs_nothing_and_reads_nothing_outside(tmp_path):
    repo = tmp_path / "repo"
    outside = tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (repo / ".git").mkdir()
    (outside / "env.sh").write_text("touch PWNED_outside_env\n")
    (outside / "requirements.txt").write_text("openrlhf==0.5.0\n")
    (outside / "ds_config.json").write_text('{"train_batch_size": 7, "zero_optimization": {"stage": 3}}\n')
    (repo / "evil_config.py").write_text(EVIL_PY)
    (repo / "train_exp.py").write_text(EVIL_PY.replace("PWNED_py", "PWNED_py2"))
    (repo / "setup.py").write_text("import os\nos.system('touch PWNED_setup')\nfrom setuptools import setup\nsetup()\n")
    (repo / "conftest.py").write_text("import os\nos.system('touch PWNED_conftest')\n")
    (repo / "ppo_trainer.yaml").write_text(EVIL_YAML)
    (repo / "train.sh").write_text(EVIL_SH)
    (repo / "requirements.txt").write_text("-r ../outside/requirements.txt\n-c ../outside/requirements.txt\n"
                                           "--index-url http://example.invalid/simple\nopenrlhf==0.9.5\n")
    (repo / "pyproject.toml").write_text('[build-system]\nrequires = ["evil"]\nbuild-backend = "evil_config"\n'
                                         '[project]\nname = "x"\ndependencies = ["vllm==0.8.5"]\n')
    (repo / "ds_config.json").write_text('{"train_batch_size": "$(touch PWNED_json)", "bf16": {"enabled": true}}\n')
    outside_files = [str(outside / n) for n in ("env.sh", "requirements.txt", "ds_config.json")]

    env = dict(os.environ, NO_COLOR="1", RLHF_LINT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([sys.executable, "-c", HOOK, str(repo), os.pathsep.join(outside_files)], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=300)
    audit_lines = [line for line in proc.stderr.splitlines() if line.startswith("AUDIT ")]
    assert audit_lines, proc.stderr[-3000:]
    audit = json.loads(audit_lines[-1][len("AUDIT "):])

    assert audit["exit"] in (0, 1), proc.stderr[-3000:]
    assert json.loads(proc.stdout)["summary"]["files"] >= 8  # every file was actually checked
    assert audit["events"] == []
    assert audit["network_modules"] == []
    pwned = [os.path.join(d, f) for d, _, files in os.walk(tmp_path) for f in files if "PWNED" in f]
    assert pwned == []
    for name in os.listdir(tmp_path / "outside"):
        assert (outside / name).read_text() in ("touch PWNED_outside_env\n", "openrlhf==0.5.0\n",
                                               '{"train_batch_size": 7, "zero_optimization": {"stage": 3}}\n')


def test_yaml_is_loaded_with_safe_loaders_only():
    """No module of rlhf-lint calls an unsafe YAML loader (yaml.load without SafeLoader, full_load, unsafe_load)."""
    root = ROOT
    offenders = []
    for folder in ("lint", "rules", "fixers", "schemas"):
        for dirpath, _dirs, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                text = open(os.path.join(dirpath, name), encoding="utf-8").read()
                for bad in ("yaml.load(", "yaml.load_all(", "full_load", "unsafe_load", "yaml.Loader", "UnsafeLoader",
                            "FullLoader", "yaml.CLoader"):
                    if bad in text:
                        offenders.append(f"{name}: {bad}")
    assert offenders == []
