"""CLI: python3 -m simreplay_capture.bench make-dataset|run ..."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional


def _bool_flag(p: argparse.ArgumentParser, name: str, help: str, default: bool = False) -> None:
    dest = name.replace("-", "_")
    p.add_argument(f"--{name}", dest=dest, action="store_true", default=default, help=help)
    p.add_argument(f"--no-{name}", dest=dest, action="store_false", help=f"disable --{name}")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python3 -m simreplay_capture.bench")
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-dataset", help="build the multimodal dataset from opencv-doc media")
    m.add_argument("--out", required=True)
    m.add_argument("--images", type=int, default=96)
    m.add_argument("--videos", type=int, default=8)
    m.add_argument("--formats", default="files,tar,lmdb,hdf5")
    m.add_argument("--frames", type=int, default=8, help="frames per video clip")
    m.add_argument("--image-scale", type=float, default=None,
                   help="resize every JPEG by this factor on both sides and re-encode it (quality 90); "
                        "default: the original files")
    m.add_argument("--video-share", type=float, default=None,
                   help="fraction of samples that are clips (overrides --images/--videos: "
                        "--samples in total)")
    m.add_argument("--samples", type=int, default=0,
                   help="total samples with --video-share (default --images + --videos)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--exclude-sources", metavar="DATASET_DIR", default=None,
                   help="use no photo that this other make-dataset tree was made from (a held-out split)")
    r = sub.add_parser("run", help="run the pipeline (optionally with capture)")
    r.add_argument("--data", required=True, help="directory written by make-dataset")
    r.add_argument("--format", default="files", choices=["files", "tar", "lmdb", "hdf5", "tfrecord"])
    r.add_argument("--trace", help="trace path (.jsonl or .jsonl.gz)")
    r.add_argument("--no-capture", action="store_true", help="run without capture (A/B, overhead)")
    r.add_argument("--stream", action="store_true",
                   help="--data http://...: stream the tar shards (WebDataset-style IterableDataset, one GET per "
                        "shard) instead of one GET per sample")
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--batch-size", type=int, default=8)
    r.add_argument("--prefetch-factor", type=int, default=2)
    _bool_flag(r, "pin-memory", "pin batches (effective only with CUDA)")
    _bool_flag(r, "persistent-workers", "keep workers across epochs")
    _bool_flag(r, "shuffle", "shuffle with a torch.Generator seeded by --seed", default=True)
    _bool_flag(r, "drop-last", "drop the last incomplete batch")
    r.add_argument("--epochs", type=int, default=1)
    r.add_argument("--steps", type=int, default=0, help="batches to run (overrides --epochs)")
    r.add_argument("--warmup-steps", type=int, default=2)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--step-time-s", type=float, default=0.02, help="emulated step mean (no GPU)")
    r.add_argument("--step-dist", default="constant", choices=["constant", "normal", "lognormal"])
    r.add_argument("--step-cv", type=float, default=0.0)
    r.add_argument("--emulate", action="store_true", help="emulate the step even when CUDA is present")
    r.add_argument("--image-size", type=int, default=128, help="crop size S")
    r.add_argument("--frames", type=int, default=8, help="frames decoded per clip")
    r.add_argument("--grad-accum", type=int, default=1)
    r.add_argument("--pipeline-only", action="store_true", help="no step: pure data-pipeline throughput")
    r.add_argument("--summary-json")
    from .ddp import add_parser as add_ddp_parser
    add_ddp_parser(sub)
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.cmd == "make-dataset":
        from .dataset import main_make
        return main_make(args)
    if args.cmd == "ddp":
        from .ddp import main_ddp
        return main_ddp(args)
    from .run import main_run
    return main_run(args)


if __name__ == "__main__":
    sys.exit(main())
