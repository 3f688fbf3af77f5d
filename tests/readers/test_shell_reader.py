"""The shell reader: words as bash would expand them, spans where they were written, launchers, generic jobs."""
import os
import textwrap

import pytest

from lintutil import ROOT
from rlhf_lint.engine.config import Config, load_config
from rlhf_lint.frameworks.launchers import build_shell_jobs
from rlhf_lint.model import UNKNOWN
from rlhf_lint.engine.project import Project, parse_source
from rlhf_lint.frameworks.launchers import commands_of
from rlhf_lint.readers.shell import hardware_items, parse_hardware, read_script
from rlhf_lint.readers.source import Source


def script(text, path="run.sh"):
    src = Source.from_text(path, textwrap.dedent(text), kind="shell")
    parse_source(src)
    return src


def argv(src, n=0):
    return [w.text for w in read_script(src).simple_commands[n].words]


def one_command(src):
    cmds = commands_of(src)
    assert len(cmds) == 1, [c.launcher for c in cmds]
    return cmds[0]


def test_plain_command_words_and_spans():
    src = script("deepspeed --num_gpus 4 train.py --lr 1e-5 --name 'a b' --x=3\n")
    cmd = one_command(src)
    assert cmd.launcher == "deepspeed"
    assert [(a.flag, [v.text for v in a.values]) for a in cmd.launcher_args] == [("--num_gpus", ["4"])]
    assert cmd.entry.text == "train.py" and cmd.entry_kind == "script"
    assert [(a.flag, [v.text for v in a.values]) for a in cmd.args] == [
        ("--lr", ["1e-5"]), ("--name", ["a b"]), ("--x", ["3"])]
    name = cmd.last("--name").value
    assert src.span_text(name.span) == "'a b'"
    x = cmd.last("--x")
    assert src.span_text(x.flag_span) == "--x" and src.span_text(x.value.span) == "3"


def test_variables_defaults_and_origin_span():
    src = script('''\
        ZERO="3"
        export LR=${LR:-2e-6}
        deepspeed train.py --zero_stage $ZERO --lr "${LR}" --save "${ROOT:-/ckpt}/run" --other ${UNSET}
    ''')
    cmd = one_command(src)
    zero = cmd.last("--zero_stage").value
    assert zero.text == "3"
    assert src.span_text(zero.span) == "$ZERO"
    assert src.span_text(zero.edit_span) == "3" and src.text[zero.edit_span.start - 1] == '"'
    assert "line 1" in zero.origin
    lr = cmd.last("--lr").value
    assert lr.text == "2e-6" and src.span_text(lr.span) == "${LR}"
    assert src.span_text(lr.edit_span) == "2e-6" and src.position(lr.edit_span.start).line == 2
    assert cmd.last("--save").value.text == "/ckpt/run"
    assert cmd.last("--other").value.text is UNKNOWN


def test_mixed_word_remembers_where_each_whole_expansion_was_assigned():
    src = script('''\
        TOKENS=4096
        Q="2048"
        python -m pkg.train a.b=$TOKENS "c=${D:-8}" e="$Q" f=${TOKENS}0 --g=$TOKENS --h=x$Q
    ''')
    cmd = one_command(src)
    by_text = {w.text: w for w in cmd.positionals}
    ab, c, e, f = by_text["a.b=4096"], by_text["c=8"], by_text["e=2048"], by_text["f=40960"]
    assert ab.origin_span is None and src.span_text(ab.span) == "a.b=$TOKENS"
    assert src.span_text(ab.origin_span_of(4, 8)) == "4096" and src.position(ab.origin_span_of(4, 8).start).line == 1
    assert src.span_text(c.origin_span_of(2, 3)) == "8" and src.position(c.origin_span_of(2, 3).start).line == 3
    assert src.span_text(e.origin_span_of(2, 6)) == "2048" and src.text[e.origin_span_of(2, 6).start - 1] == '"'
    assert ab.origin_span_of(3, 8) is None  # `=4096` is not one expansion's value
    assert f.origin_span_of(2, 7) is None and f.origin_span_of(2, 6) is not None  # `${TOKENS}0`: only the prefix
    g = cmd.last("--g").value
    assert g.text == "4096" and src.span_text(g.edit_span) == "4096"  # `--flag=$VAR` fixes the assignment
    h = cmd.last("--h").value
    assert h.text == "x2048" and h.origin_span is None and h.edit_span == h.span


def test_positional_and_substitution_are_unknown():
    src = script('python -m pkg.train --a $1 --b $(date) --c `x` --d "$@"\n')
    cmd = one_command(src)
    assert [cmd.last(f).value.text for f in ("--a", "--b", "--c", "--d")] == [UNKNOWN] * 4


def test_assign_default_sets_variable():
    src = script('echo ${N:=8}\ntorchrun --nproc_per_node $N t.py\n')
    assert one_command(src).launcher_args[0].value.text == "8"


def test_openrlhf_heredoc_keeps_quotes_and_splits():
    src = script('''\
        MODEL=meta/llama
        read -r -d '' training_commands <<EOF
        openrlhf.cli.train_sft \\
           --pretrain $MODEL \\
           --input_template "User: {}" \\
           --max_len 2048
        EOF
        if [[ ${1} != "slurm" ]]; then
            deepspeed --module $training_commands
        fi
    ''')
    cmd = one_command(src)
    assert cmd.launcher == "deepspeed" and cmd.entry_kind == "module"
    assert cmd.entry.text == "openrlhf.cli.train_sft"
    assert src.span_text(cmd.entry.span) == "openrlhf.cli.train_sft"
    assert cmd.heredoc_span is not None and cmd.entry.span.start in cmd.heredoc_span
    tmpl = cmd.last("--input_template")
    assert [v.text for v in tmpl.values] == ['"User:', '{}"']  # quotes stay, the value is split
    assert all(v.literal_quotes for v in tmpl.values)
    pretrain = cmd.last("--pretrain").value
    assert pretrain.text == "meta/llama" and src.span_text(pretrain.span) == "$MODEL"
    assert src.span_text(pretrain.edit_span) == "meta/llama"
    max_len = cmd.last("--max_len").value
    assert src.span_text(max_len.span) == "2048" and not max_len.literal_quotes
    assert cmd.continuation == " \\\n   "


def test_quoted_heredoc_delimiter_does_not_expand():
    src = script("read -r -d '' c <<'EOF'\npkg.mod --x $A\nEOF\npython -m $c\n")
    cmd = one_command(src)
    assert cmd.entry.text == "pkg.mod" and cmd.last("--x").value.text == "$A"


def test_arrays_with_comments_and_append():
    src = script('''\
        ARGS=(
           --a 1   # first
           # a comment line
           --b "two words"
        )
        ARGS+=(--c)
        python3 -m pkg.train "${ARGS[@]}" --d 4
    ''')
    cmd = commands_of(src)[0]
    assert [(a.flag, [v.text for v in a.values]) for a in cmd.args][:3] == [
        ("--a", ["1"]), ("--b", ["two words"]), ("--c", [])]
    assert src.span_text(cmd.args[1].values[0].span) == '"two words"'
    assert src.span_text(cmd.args[0].flag_span) == "--a"


def test_unquoted_array_expansion_splits_elements():
    src = script('A=(--x "1 2")\npython -m m ${A[@]}\n')
    assert [v.text for v in one_command(src).last("--x").values] == ["1", "2"]


def test_branches_make_disagreeing_values_unknown():
    src = script('''\
        A=1; B=1; C=1
        if [ -n "$X" ]; then A=2; B=1; C=3; else A=5; B=1; fi
        for i in 1 2; do D=7; done
        python -m m --a $A --b $B --c $C --d $D
    ''')
    cmd = one_command(src)
    assert [cmd.last(f).value.text for f in ("--a", "--b", "--c", "--d")] == [UNKNOWN, "1", UNKNOWN, UNKNOWN]


def test_commands_inside_functions_and_loops_are_found():
    src = script('''\
        run() {
          local lr="$1"
          deepspeed train.py --lr $lr
        }
        while true; do torchrun --nproc_per_node 2 t.py; done
    ''')
    assert [c.launcher for c in commands_of(src)] == ["deepspeed", "torchrun"]
    assert commands_of(src)[0].last("--lr").value.text is UNKNOWN


def test_bash_c_payload_is_parsed_with_spans_into_the_file():
    src = script('''srun -N 2 --overlap bash -c "cd /w && torchrun --nproc_per_node 8 -m pkg.train --cfg '{\\"a\\": 1}' --n \\$N"\n''')
    cmds = commands_of(src)
    assert len(cmds) == 1
    cmd = cmds[0]
    assert cmd.launcher == "torchrun" and cmd.entry.text == "pkg.train"
    assert src.span_text(cmd.launcher_args[0].value.span) == "8"
    cfg = cmd.last("--cfg").value
    assert cfg.text == '{"a": 1}'
    assert src.span_text(cmd.last("--cfg").flag_span) == "--cfg"
    assert cmd.last("--n").value.text is UNKNOWN


def test_env_prefix_and_wrappers():
    src = script("CUDA_VISIBLE_DEVICES=0,1 nohup python -u train.py --a 1 > log 2>&1 &\n")
    cmd = one_command(src)
    assert cmd.launcher == "python" and cmd.entry.text == "train.py" and cmd.last("--a").value.text == "1"
    assert read_script(src).simple_commands[0].env == {"CUDA_VISIBLE_DEVICES": "0,1"}


def test_ray_job_submit_after_separator():
    src = script('''ray job submit --address="http://127.0.0.1:8265" --runtime-env-json='{"working_dir": "/w"}' \\
       -- python3 -m openrlhf.cli.train_ppo_ray --actor_num_gpus_per_node 8\n''')
    cmd = one_command(src)
    assert cmd.launcher == "ray"
    assert [a.flag for a in cmd.launcher_args] == ["--address", "--runtime-env-json"]
    assert cmd.launcher_args[1].value.text == '{"working_dir": "/w"}'
    assert cmd.entry.text == "openrlhf.cli.train_ppo_ray" and cmd.last("--actor_num_gpus_per_node").value.text == "8"


@pytest.mark.parametrize("line,launcher,entry", [
    ("python -m torch.distributed.run --nproc_per_node 2 -m pkg.t --a 1", "torchrun", "pkg.t"),
    ("python -m torch.distributed.launch --nproc_per_node=2 t.py --a 1", "torchrun", "t.py"),
    ("accelerate launch --config_file c.yaml --num_processes 8 t.py --a 1", "accelerate", "t.py"),
    ("accelerate launch --multi_gpu t.py --a 1", "accelerate", "t.py"),
    ("/usr/bin/python3.10 -u t.py --a 1", "python", "t.py"),
    ("srun -p gpu --nodes=2 deepspeed --module pkg.t --a 1", "deepspeed", "pkg.t"),
])
def test_launcher_shapes(line, launcher, entry):
    cmd = one_command(script(line + "\n"))
    assert (cmd.launcher, cmd.entry.text, cmd.last("--a").value.text) == (launcher, entry, "1")


def test_not_launches():
    src = script("pip install -e .\necho deepspeed\npython -c 'print(1)'\nbash run.sh\n")
    assert commands_of(src) == []


def test_negative_numbers_are_values_and_nargs_pairs_group():
    cmd = one_command(script("python -m m --coef -0.5 --range 0.2 0.27 --flag\n"))
    assert [(a.flag, [v.text for v in a.values]) for a in cmd.args] == [
        ("--coef", ["-0.5"]), ("--range", ["0.2", "0.27"]), ("--flag", [])]


def test_hardware_comment():
    src = script("# rlhf-lint: hardware gpu=A100-80GB gpus-per-node=8 host-memory=500GB nodes=2\n"
                 "deepspeed t.py\n")
    cmd = one_command(src)
    # the words as written: the configuration's checks read them (Config.hardware_for)
    assert cmd.hardware == {"gpu": "A100-80GB", "gpus-per-node": "8", "host-memory": "500GB", "nodes": "2"}


def test_hardware_comment_words_and_where_they_are():
    text = "# rlhf-lint: hardware gpu=RTX-4O90 gpus_per_node=eight bogus=1 nodes\n"
    items = hardware_items(text)
    assert [(key, value, text[span.start:span.end]) for key, value, span in items] == [
        ("gpu", "RTX-4O90", "gpu=RTX-4O90"), ("gpus-per-node", "eight", "gpus_per_node=eight"),
        ("bogus", "1", "bogus=1"), ("nodes", "", "nodes")]
    assert parse_hardware(text)[0] == {"gpu": "RTX-4O90", "gpus-per-node": "eight"}


def test_syntax_error_becomes_parse_error_and_tolerated_forms_do_not():
    bad = script("OPENRLHF_PATH=<ROOT>\n")
    assert bad.parse_error is not None and bad.parse_error.offset == 14
    ok = script("deepspeed t.py \\\n  --a 1 \\\n")  # a dangling continuation at EOF is fine for bash
    assert ok.parse_error is None


# Words tree-sitter-bash misreads although bash reads them (`bash -n` accepts each): (script, the word reported)
MISREAD = [
    ("x=${x:-$(((max_prompt_length + max_response_length) * 2))}\n",
     "${x:-$(((max_prompt_length + max_response_length) * 2))}"),
    ("CONTENTS=${CONTENTS:-['npu','cpu']}\n", "${CONTENTS:-['npu','cpu']}"),
    ('echo "${x:-$(((a+1)*2))}" ok\n', "${x:-$(((a+1)*2))}"),
    ("python t.py --x=${A:-['a','b']} --y 1\n", "${A:-['a','b']}"),
    ("case $x in\n  *) n=${n:-$(((a+b)*2))} ;;\nesac\n", "${n:-$(((a+b)*2))}"),
    ("cat <<EOF\n${x:-['a','b']}\nEOF\n", "${x:-['a','b']}"),
    ("cat <<EOF\n$(((a+b)*2))\nEOF\n", "$(((a+b)"),  # the piece of the heredoc body tree-sitter cut off
]
# Syntax errors bash reports (`bash -n` fails on each), also in or next to a ${...}: (script, the token reported)
REJECTED = [
    ("OPENRLHF_PATH=<ROOT>\n", "<"),
    ('echo "unterminated\n', '"'),  # the quote bash reads to the end of the file
    ("echo ${x:-$(&&&)}\n", "$(&&&"),  # bash parses a command substitution in a ${...} when it reads it
    ("echo ${x:-${y}\n", "${x:-${y}"),  # the inner ${ takes the }
    ("echo \"${x:-'}\"\n", "\"${x:-'}\""),  # a quote opened in the default runs past the }
    ("x=${x:-$(((a + b) * 2))}\nOPENRLHF_PATH=<ROOT>\n", "<"),  # a misread word before it does not take its place
    # tree-sitter puts the valid command before the error into the same ERROR node: not the place bash fails
    ("deepspeed t.py --zero_stage 3\n)\n", ")"),
    ("deepspeed t.py --zero_stage 3\n{ { }\n", "{ { }"),
]


@pytest.mark.parametrize("text,word", MISREAD)
def test_a_word_tree_sitter_misreads_is_unparsed_not_a_syntax_error(text, word):
    src = script(text)
    assert src.parse_error is None
    assert [src.span_text(span) for span in src.tree.unparsed] == [word]


@pytest.mark.parametrize("text,token", REJECTED)
def test_syntax_errors_bash_reports_stay_parse_errors_at_their_token(text, token):
    err = script(text).parse_error
    assert err is not None and text[err.offset : err.end] == token


def test_the_word_tables_agree_with_bash():
    import shutil
    import subprocess

    if shutil.which("bash") is None:
        pytest.skip("no bash")
    for text, _ in MISREAD + REJECTED:  # `bash -n` reads the script and runs nothing
        rc = subprocess.run(["bash", "-n"], input=text.encode(), capture_output=True).returncode
        assert (rc == 0) == ((text, _) in MISREAD), text


# Constructs bash cannot close, where tree-sitter builds no smaller ERROR or MISSING node to point at (with nested
# ones its root is an ERROR node): (script, where F003 points, its message). bash reads to the end of the file.
UNCLOSED = [
    ('if [ "$NODES" = 1 ]; then\n  if [ -n "$DEBUG" ]; then\n    if [ -n "$X" ]; then\n      deepspeed t.py\n',
     (3, 5), "syntax error: 'if' is never closed (missing 'fi')"),
    ("for lr in 1e-5 2e-5; do\n  for bs in 8 16; do\n    while true; do\n      deepspeed t.py --lr $lr\n",
     (3, 5), "syntax error: 'while' is never closed (missing 'done')"),
    ("case $x in\n a) case $y in\n  b) case $z in\n   c) echo ;;\n",
     (3, 6), "syntax error: 'case' is never closed (missing 'esac')"),
    # the broken construct, not the valid command tree-sitter put into the same ERROR node
    ("deepspeed t.py --zero_stage 3\n{ { {\n", (2, 5), "syntax error: '{' is never closed (missing '}')"),
    ("echo " + "$(" * 20 + "\n", (1, 44), "syntax error: '$(' is never closed (missing ')')"),
    ("echo " + '"$(' * 10 + "\n", (1, 34), "syntax error: '$(' is never closed (missing ')')"),
    ("echo " + "<(" * 20 + "\n", (1, 44), "syntax error: '<(' is never closed (missing ')')"),
]
# Reserved words that end or continue nothing, which tree-sitter reads as command names: bash stops at them
STRAY = [
    ("deepspeed t.py --zero_stage 3\nfi\n", (2, 1), "syntax error near unexpected token 'fi'"),
    ("echo a; then echo b\n", (1, 9), "syntax error near unexpected token 'then'"),
    ("while true; do echo; done; done\n", (1, 28), "syntax error near unexpected token 'done'"),
    ("case $x in a) echo ;; esac\nesac\n", (2, 1), "syntax error near unexpected token 'esac'"),
    ("{ echo; }\n}\n", (2, 1), "syntax error near unexpected token '}'"),
    ("echo a\n  do\n", (2, 3), "syntax error near unexpected token 'do'"),
    ("if true; then\n  echo\ndone\n", (3, 1), "syntax error near unexpected token 'done'"),  # not at EOF's `fi`
    ("x=${y:-$(fi)}\n", (1, 10), "syntax error near unexpected token 'fi'"),  # bash parses $(...) in ${...}
]
# Valid scripts with reserved words tree-sitter reads as plain words, or where bash does not parse them
STRAY_ACCEPTED = [
    "time for x in a b; do echo $x; done\n",  # after `time`, `!`, `coproc`: the keywords become words
    "time { deepspeed t.py; }\n",
    "! { echo; }\n",
    "coproc while true; do :; done\n",
    "time -p if true; then :; fi\n",
    "x=1 fi\n",  # not a reserved word after an assignment
    "echo fi done esac } then\n",
    "echo `fi`\n",  # bash -n does not parse `...`
    "cat <<EOF\n$(fi)\nEOF\n",  # nor a heredoc body
    # tree-sitter misreads the quotes of the first line and puts `for` into a string: the `done` still closes it
    "echo \"`echo 'a'`\" \"'b'\"\nfor e in $x; do\n  d=\"` echo 'c'`\"\ndone\n",
]


@pytest.mark.parametrize("text,where,message", UNCLOSED + STRAY)
def test_structure_errors_are_syntax_errors_at_their_token(text, where, message):
    src = script(text)
    err = src.parse_error
    assert err is not None and err.message == message
    position = src.position(err.offset)
    assert (position.line, position.column) == where


@pytest.mark.parametrize("text", STRAY_ACCEPTED)
def test_reserved_words_bash_accepts_are_no_syntax_error(text):
    assert script(text).parse_error is None


def test_the_structure_tables_agree_with_bash():
    import shutil
    import subprocess

    if shutil.which("bash") is None:
        pytest.skip("no bash")
    for text in [t for t, _, _ in UNCLOSED + STRAY] + STRAY_ACCEPTED:  # `bash -n` reads the script, runs nothing
        rc = subprocess.run(["bash", "-n"], input=text.encode(), capture_output=True).returncode
        assert (rc == 0) == (text in STRAY_ACCEPTED), text


# valid bash whose tree-sitter root is an ERROR node holding no smaller error (the fixture says more)
UNSTRUCTURED = os.path.join(ROOT, "tests", "fixtures", "shell", "S007_unstructured_good.sh")


def test_a_script_tree_sitter_cannot_structure_is_no_error_and_its_commands_are_read():
    with open(UNSTRUCTURED, encoding="utf-8") as fh:
        src = script(fh.read())
    assert src.tree.doc.tree.root_node.type == "ERROR" and src.parse_error is None
    cmd = one_command(src)
    assert cmd.last("--zero_stage").value.text == "3"
    assert cmd.last("--pretrain").value.text is UNKNOWN  # set by the assignment tree-sitter took apart
    assert "opt" in read_script(src).variables


def test_a_misread_word_is_one_unknown_value_and_the_rest_is_read():
    src = script("x=1\necho ${y:-$(((a + b) * 2))} ${x:-$(((a + b) * 2))} end\n"
                 "C=${C:-['npu','cpu']}\ndeepspeed train.py --contents $C --zero_stage 3\n")
    assert src.parse_error is None
    # the default's pieces `)`, `*`, `2))` are no words of it; a set variable still gives its value
    assert argv(src) == ["echo", UNKNOWN, "1", "end"]
    cmd = one_command(src)
    assert cmd.last("--contents").value.text is UNKNOWN and cmd.last("--zero_stage").value.text == "3"


def test_misread_words_in_deep_nesting_are_not_followed():
    # each ${...} around an error is scanned once: 10,000 of them stay linear and are a syntax error as before
    text = "x=" + "${x:-" * 10_000 + "$(((a+b)*2))" + "}" * 10_000 + "\n"
    assert script(text).parse_error is not None


def test_non_ascii_offsets_are_characters():
    src = script("# é ü\nA=ü\npython -m m --x $A --y 'ö'\n")
    cmd = one_command(src)
    assert src.span_text(cmd.last("--y").value.span) == "'ö'"
    assert src.span_text(cmd.last("--x").value.edit_span) == "ü"


def _jobs(src, tmp_path=None, others=()):
    project = Project([src, *others], Config())
    return build_shell_jobs(src, project)


def test_generic_jobs_topology_and_config_paths():
    src = script('''\
        deepspeed --include localhost:0,1,2,3 train.py --deepspeed ds_z3.json
        torchrun --nnodes 2 --nproc_per_node 8 t.py
        accelerate launch --config_file acc.yaml --num_processes 16 --num_machines 2 --zero_stage 2 t.py
        deepspeed --hostfile hosts t.py
    ''')
    jobs = _jobs(src)
    # `train.py --deepspeed FILE` is the Hugging Face Trainer reading the config
    assert [j.framework for j in jobs] == ["hf", "torchrun", "accelerate", "deepspeed"]
    ds, tr, acc, hosts = jobs
    assert (ds.value("topology.nodes"), ds.value("topology.gpus_per_node"), ds.value("topology.world_size")) == (1, 4, 4)
    cfg = ds.settings.get("deepspeed.config_path")
    assert cfg.value == "ds_z3.json" and src.span_text(cfg.span) == "ds_z3.json"
    assert tr.value("topology.world_size") == 16
    assert acc.value("accelerate.config_path") == "acc.yaml" and acc.value("topology.gpus_per_node") == 8
    assert acc.value("zero.stage") == 2
    assert hosts.value("topology.nodes") is None and hosts.value("topology.world_size") is None


def test_sourced_file_inside_project_defines_variables(tmp_path):
    (tmp_path / "common.sh").write_text("export MODEL=org/model\n")
    main = tmp_path / "run.sh"
    main.write_text("source ./common.sh\npython -m pkg.t --pretrain $MODEL\n")
    common = Source.from_bytes(str(tmp_path / "common.sh"), (tmp_path / "common.sh").read_bytes(), kind="shell")
    src = Source.from_bytes(str(main), main.read_bytes(), kind="shell")
    for s in (common, src):
        parse_source(s)
    project = Project([src, common], Config(root=str(tmp_path)))
    assert commands_of(src)[0].last("--pretrain").value.text is UNKNOWN  # without the project: unknown
    word = commands_of(src, project)[0].last("--pretrain").value
    # reported where it is used; the assignment is in another file, so a fix edits the use
    assert word.text == "org/model" and word.path == str(main) and src.span_text(word.span) == "$MODEL"
    assert word.origin == "$MODEL from line 1" and word.origin_span is None
    # a file outside the checked set is never read
    lone = Project([src], Config(root=str(tmp_path)))
    assert src.tree._with_project is not None
    src.tree._with_project = None
    assert commands_of(src, lone)[0].last("--pretrain").value.text is UNKNOWN


def test_a_sourced_file_is_read_whatever_the_working_directory(tmp_path, monkeypatch):
    # without a configuration file the root was the working directory: a tree linted from elsewhere lost its
    # sourced files (OpenRLHF's train_nonrl_slurm.sh sources train_dpo_llama.sh for its command)
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    (repo / "common.sh").write_text("export MODEL=org/model\n")
    main = repo / "run.sh"
    main.write_text("source ./common.sh\npython -m pkg.t --pretrain $MODEL\n")
    sources = [Source.from_bytes(str(p), p.read_bytes(), kind="shell") for p in (main, repo / "common.sh")]
    for s in sources:
        parse_source(s)
    monkeypatch.chdir(elsewhere)
    project = Project(sources, load_config(None))  # no configuration file: its root is the working directory
    assert commands_of(sources[0], project)[0].last("--pretrain").value.text == "org/model"
    # with a configuration file the repository it marks is the bound: a checked file outside it is not read
    (elsewhere / "rlhf-lint.toml").write_text("")
    sources = [Source.from_bytes(str(p), p.read_bytes(), kind="shell") for p in (main, repo / "common.sh")]
    for s in sources:
        parse_source(s)
    bounded = Project(sources, load_config(str(elsewhere / "rlhf-lint.toml")))
    assert commands_of(sources[0], bounded)[0].last("--pretrain").value.text is UNKNOWN


def test_words_after_flag_equals_value_are_positionals():
    cmd = one_command(script("python3 -m verl.trainer.main_ppo --config-name=ppo a.b=1 c=2 --x 3 4\n"))
    assert [w.text for w in cmd.positionals] == ["a.b=1", "c=2"]
    assert [(a.flag, [v.text for v in a.values]) for a in cmd.args] == [("--config-name", ["ppo"]), ("--x", ["3", "4"])]


def test_a_value_doubled_line_after_line_becomes_unknown_instead_of_exhausting_memory():
    """`A="$A$A"` thirty times would hold 2**30 pieces; past MAX_VALUE_PIECES the value is unknown (fourteen
    doublings show it without the bound taking long)."""
    from rlhf_lint.readers import shell

    lines = ["A=x"] + ['A="$A$A"'] * 14 + ['deepspeed train.py --lr "$A"']
    read = read_script(script("\n".join(lines) + "\n"))
    assert read.variables["A"].text is UNKNOWN
    assert argv(script("\n".join(lines) + "\n"))[-1] is UNKNOWN
    # twelve doublings (4096 pieces) are still a known value, bash's own
    small = read_script(script("\n".join(lines[:13]) + "\n"))
    assert small.variables["A"].text == "x" * 4096 and small.variables["A"].size() <= shell.MAX_VALUE_PIECES
    arrays = ["A=(x)"] + ['A=("${A[@]}" "${A[@]}")'] * 14
    array = read_script(script("\n".join(arrays) + "\n")).variables["A"]
    assert array.size() <= shell.MAX_VALUE_PIECES and any(f.text is UNKNOWN for el in array.elements for f in el)


def test_expanding_a_large_value_over_and_over_stops_at_the_budget():
    """A 4,096-piece value expanded 20 times in one heredoc copies 80,000 pieces (200 times: 800,000, 300 MB):
    past MAX_EXPANDED_PIECES the expansions are unknown."""
    from rlhf_lint.readers import shell

    body = ["A=x"] + ['A="$A$A"'] * 12 + ["read -r -d '' CMD <<EOF", "deepspeed train.py " + "$A" * 20, "EOF"]
    read = read_script(script("\n".join(body) + "\n"))
    cmd = read.variables["CMD"]
    assert cmd.text is UNKNOWN
    assert cmd.size() <= shell.MAX_EXPANDED_PIECES + 4 * shell.MAX_VALUE_PIECES


def test_array_appended_in_one_branch_keeps_its_common_prefix_then_a_gap():
    src = script('''\
        A=(x=1 y=2); B=(p=1)
        if [ "$S" -gt 1 ]; then A+=(z=3); fi
        case "$D" in npu) B+=(q=2) ;; gpu) B=(p=1 r=2) ;; esac
        python -m m "${A[@]}" "${B[@]}" w=4 ${A[1]} ${A[2]}
    ''')
    words = read_script(src).simple_commands[-1].words
    assert [w.text for w in words] == ["python", "-m", "m", "x=1", "y=2", UNKNOWN, "p=1", UNKNOWN, "w=4", "y=2",
                                       UNKNOWN]
    # known elements point where they were written; the unknown tail at the expansion
    assert [src.span_text(w.span) for w in words[3:8]] == ["x=1", "y=2", '"${A[@]}"', "p=1", '"${B[@]}"']


def test_arrays_that_part_keep_the_words_every_path_ends_with():
    """verl's launch idiom: LAUNCH=(python3), replaced under an `if` by LAUNCH=(uv run ... python3): a gap for the
    words that differ, then python3, which every path ends with; the command is python's."""
    src = script('''\
        LAUNCH=(python3)
        if [ "${VERL_USE_UV:-1}" != 0 ]; then
            LAUNCH=(uv run --frozen --extra vllm python3)
        fi
        "${LAUNCH[@]}" -m verl.trainer.main_ppo trainer.nnodes=1
    ''')
    assert argv(src, -1) == [UNKNOWN, "python3", "-m", "verl.trainer.main_ppo", "trainer.nnodes=1"]
    cmd = one_command(src)
    assert (cmd.launcher, cmd.entry.text, [w.text for w in cmd.positionals]) == (
        "python", "verl.trainer.main_ppo", ["trainer.nnodes=1"])
    # the tail never reaches into the head: (a b) and (a b c b) keep a b, then one gap
    src = script('''\
        A=(a b)
        if [ -n "$X" ]; then A=(a b c b); fi
        python -m m "${A[@]}"
    ''')
    assert argv(src, -1)[3:] == ["a", "b", UNKNOWN]


def test_an_interpreter_set_in_a_branch_still_launches_its_module():
    src = script('''\
        PYTHON=python
        if [ -f /opt/isaac/python.sh ]; then PYTHON=/opt/isaac/python.sh; fi
        $PYTHON -m verl.trainer.main_ppo trainer.nnodes=1
    ''')
    cmd = one_command(src)
    assert (cmd.launcher, cmd.entry.text) == ("python", "verl.trainer.main_ppo")
    # an unread word before a script is no launcher: nothing says what runs it
    assert commands_of(script("$RUNNER train.py --lr 1e-5\n")) == []


def test_an_unknown_word_keeps_the_known_text_at_its_end():
    src = script('''\
        MODEL_ID=Qwen3-8B
        MODEL_PATH=${MODEL_PATH:-${HOME}/models/${MODEL_ID}}
        python -m m a=$HOME/models/Qwen2.5-7B b="$MODEL_PATH" c=$(pwd) d=x
    ''')
    words = read_script(src).simple_commands[-1].words
    assert [(w.text, w.suffix) for w in words[3:]] == [(UNKNOWN, "/models/Qwen2.5-7B"), (UNKNOWN, "/models/Qwen3-8B"),
                                                      (UNKNOWN, ""), ("d=x", "")]


def test_a_later_append_after_a_gap_is_kept():
    src = script('''\
        A=(x=1)
        for i in 1 2; do A+=("n$i=1"); done
        A+=(z=3)
        python -m m "${A[@]}"
    ''')
    assert argv(src, -1)[3:] == ["x=1", UNKNOWN, "z=3"]


def test_arrays_that_agree_stay_known_and_scalars_that_differ_stay_unknown():
    src = script('''\
        A=(x=1); S=a
        if [ -n "$X" ]; then A=(x=1); S=b; else A=(x=1); S=a; fi
        if [ -n "$Y" ]; then T=(a); else T=b; fi
        python -m m "${A[@]}" $S "${T[@]}"
    ''')
    assert argv(src, -1)[3:] == ["x=1", UNKNOWN, UNKNOWN]


def test_a_parse_past_its_time_budget_is_skipped_and_the_other_files_are_checked(tmp_path, monkeypatch):
    # tree-sitter's error recovery on deeply nested broken text is superlinear; the reader abandons such a parse
    # (PARSE_SECONDS) and the file is reported as not checked (F004), here with a budget small enough to trip
    from rlhf_lint.engine.runner import Options, lint
    from rlhf_lint.readers import shell

    monkeypatch.setattr(shell, "PARSE_SECONDS", 0.001)
    broken = "#!/bin/bash\ndeepspeed train.py --save_" + "(" * 30000 + "\n"
    (tmp_path / "broken.sh").write_text(broken)
    (tmp_path / "ok.sh").write_text("#!/bin/bash\ndeepspeed train.py --zero_stage 3 --zero_stage 2\n")
    result = lint([str(tmp_path)], Config(), Options(select=["F004", "S002"]))
    found = sorted((d.path.rsplit("/", 1)[-1], d.code) for d in result.diagnostics)
    assert found == [("broken.sh", "F004"), ("ok.sh", "S002")]
    (f004,) = [d for d in result.diagnostics if d.code == "F004"]
    assert "did not parse within" in f004.message


def test_characters_past_the_scanners_ctype_table_neither_crash_nor_change_the_words():
    # tree-sitter-bash's scanner calls isdigit/isalpha on these after `{`, `-`, `$` and `?`: before the parser saw
    # them as ASCII, about half these parses read unmapped memory and the process died
    for cp in (0x80000, 0xE0001, 0xF37FD, 0x10FFFF):
        ch = chr(cp)
        hostile = script(f"echo {{{ch}..}} [[ -{ch} ]] ${{x?{ch}}}\ncat <<EOF\n${ch}\nEOF\n")
        assert hostile.parse_error is not None  # `$` then a non-name in a heredoc: tree-sitter-bash's error too
        src = script(f"echo {{{ch}..}} [[ -{ch} ]]\nA=/d/é{ch}\npython -m m --x $A --y '{ch}'\n")
        cmd = one_command(src)
        assert cmd.last("--x").value.text == f"/d/é{ch}"
        assert src.span_text(cmd.last("--x").value.edit_span) == f"/d/é{ch}"
        assert src.span_text(cmd.last("--y").value.span) == f"'{ch}'"


def test_non_ascii_text_after_a_variable_is_not_part_of_its_name():
    src = script('OUT=/ckpt\npython -m m --x "$OUT目录" --y $OUT/模型\n')
    cmd = one_command(src)
    assert cmd.last("--x").value.text == "/ckpt目录"
    assert cmd.last("--y").value.text == "/ckpt/模型"
