import argparse
from datetime import datetime


def add_optim_args(parser, prefix, lr=1e-6):
    parser.add_argument(f"--{prefix}.lr", type=float, default=lr)
    parser.add_argument(f"--{prefix}.betas", type=float, nargs=2, default=(0.9, 0.95))


def train(args):
    return args


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt.max_mem", type=int, default=int(1e8))
    parser.add_argument("--ds.param_dtype", type=str, default="bf16", choices=["bf16", "fp16"])
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--packing", action="store_true", default=False)
    parser.add_argument("--muon.no_nesterov", dest="muon.nesterov", action="store_false")
    parser.add_argument("--run_name", type=str, default="demo_%s" % datetime.now())
    parser.add_argument("--target_modules", type=str, nargs="*", default="all-linear")
    for prefix in ("actor", "critic"):
        parser.add_argument(f"--{prefix}.warmup", type=float, default=0.1 if prefix == "actor" else 0.2)
    add_optim_args(parser, "actor")
    add_optim_args(parser, "critic", lr=9e-6)
    train(parser.parse_args())
