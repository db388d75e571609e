#!/usr/bin/env python3
"""Converts the metrics.jsonl of hkt-train runs into TensorBoard event files.

    tools/metrics_to_tensorboard.py RUN_DIR [RUN_DIR ...] [--logdir DIR]
    tensorboard --logdir DIR

Each run becomes DIR/<run folder name>/ (default DIR: RUN_DIR/tensorboard
when one run is given, else runs/tensorboard) with the scalars train/loss,
train/lr, train/grad_norm, train/step_ms, train/epoch (and train/allreduce_ms
under mpirun), val/loss, val/accuracy, test/loss and test/accuracy against the
optimizer step. Written with tensorboardX (pip install tensorboardX), else
with PyTorch's torch.utils.tensorboard. Exit codes as the C++ tools: 2 for a
bad command line, 1 for a missing or bad file or a missing package.
"""
import argparse
import json
import os
import sys

# metrics.jsonl "type" -> {field: TensorBoard tag}
TAGS = {
    "train": {"loss": "train/loss", "lr": "train/lr", "grad_norm": "train/grad_norm", "step_ms": "train/step_ms",
              "epoch": "train/epoch", "allreduce_ms": "train/allreduce_ms"},
    "eval": {"val_loss": "val/loss", "val_accuracy": "val/accuracy"},
    "test": {"test_loss": "test/loss", "test_accuracy": "test/accuracy"},
}


def summary_writer():
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            sys.exit("metrics_to_tensorboard.py: needs tensorboardX (pip install tensorboardX) or PyTorch")
    return SummaryWriter


def convert(run_dir, logdir, writer_class):
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.isfile(path):
        sys.exit(f"metrics_to_tensorboard.py: {path}: no such file")
    out = os.path.join(logdir, os.path.basename(os.path.normpath(run_dir)))
    scalars = 0
    writer = writer_class(out)
    with open(path) as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                step = int(record["step"])
            except (ValueError, KeyError, TypeError) as error:
                sys.exit(f"metrics_to_tensorboard.py: {path}: line {number}: {error}")
            for field, tag in TAGS.get(record.get("type"), {}).items():
                if field in record:
                    writer.add_scalar(tag, float(record[field]), step)
                    scalars += 1
    writer.close()
    print(f"{path}: {scalars} scalars to {out}")


def main():
    parser = argparse.ArgumentParser(description="hkt-train metrics.jsonl -> TensorBoard event files")
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders written by hkt-train")
    parser.add_argument("--logdir", help="where the event files go (default: RUN_DIR/tensorboard for one run, "
                                         "else runs/tensorboard)")
    args = parser.parse_args()  # exits 2 on a bad command line
    logdir = args.logdir or (os.path.join(args.runs[0], "tensorboard") if len(args.runs) == 1 else "runs/tensorboard")
    writer_class = summary_writer()
    for run_dir in args.runs:
        convert(run_dir, logdir, writer_class)


if __name__ == "__main__":
    main()
