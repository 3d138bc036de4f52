"""Throughput and peak memory of every encoder at real size, in bf16, on one GPU.

    python bench/gpu_encoders.py                 # GPU: real sizes (real weights if cached, else random)
    python bench/gpu_encoders.py --only vjepa2   # one registry entry
    python bench/gpu_encoders.py --cpu-smoke     # tiny variants on CPU: checks this script itself
    python bench/gpu_encoders.py --flops         # FLOPs and parameters per encoder, counted on the meta device

Weights do not change speed, so an encoder whose weights are not in the Hugging Face cache runs
with random ones (the ``weights`` column says which). Inputs are random preprocessed clips of the
shape the extractor feeds (decoding and resizing are not timed).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field

import torch

from phyprobe.encoders import WeightsNotFoundError, from_config


@dataclass(frozen=True)
class Case:
    name: str
    kwargs: dict
    frames: int  # clip length asked for; the encoder's frames_for() may round it up
    batch: int  # clips per forward pass
    tiny: dict = field(default_factory=lambda: {"tiny": True})  # --cpu-smoke overrides

    @property
    def label(self) -> str:
        return self.name + "".join(f" {k}={v}" for k, v in self.kwargs.items())


CASES = [
    Case("perception_encoder", {"size": "G"}, 16, 2),
    Case("perception_encoder", {"size": "G", "output": "patch_mean", "layer": 40}, 16, 2, {"tiny": True, "layer": 1}),
    Case("perception_encoder", {"size": "L"}, 16, 4),
    Case("vjepa2", {"size": "H"}, 16, 4),
    Case("vjepa2", {"size": "L"}, 16, 4),
    Case("vjepa2", {"size": "g"}, 16, 2),
    Case("wan22_vae", {}, 17, 1, {"tiny": True, "image_size": (32, 64)}),
    Case("clip", {"size": "L"}, 16, 4),
    Case("siglip2", {"size": "SO400M"}, 16, 4),
    Case("dinov2", {"size": "L"}, 16, 4),
    Case("dinov3", {"size": "L"}, 16, 4),
    Case("efficientnet_lite0", {}, 16, 8, {"image_size": 32}),
    Case("efficientnet_lite1", {}, 16, 8, {"image_size": 32}),
    Case("efficientnet_lite2", {}, 16, 8, {"image_size": 32}),
]


def build(case: Case, device: torch.device, smoke: bool):
    """The encoder on ``device`` (built there directly: a random 1.9B tower initialises in seconds on a GPU)."""
    kwargs = {**case.kwargs, **(case.tiny if smoke else {})}
    with torch.device(device):
        if smoke:
            return from_config(case.name, **{"weights": None, **kwargs}), "random"
        try:
            enc = from_config(case.name, **kwargs)
            return enc.to(device), enc.weights_id
        except WeightsNotFoundError:
            return from_config(case.name, **{**kwargs, "weights": None}), "random"


def run(case: Case, device: torch.device, dtype: torch.dtype, iters: int, smoke: bool) -> dict:
    enc, weights = build(case, device, smoke)
    enc = enc.to(dtype)
    t = enc.frames_for(case.frames if not smoke else 4)
    b = 1 if smoke else case.batch
    x = torch.randn(b, t, 3, *enc.preprocess.size, device=device, dtype=dtype)
    enc(x)  # warm-up (kernel selection, allocator)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for _ in range(iters):
        y = enc(x)
    if device.type == "cuda":
        torch.cuda.synchronize()
    dt = (time.perf_counter() - start) / iters
    assert y.shape == (b, enc.num_steps(t), enc.feature_dim), y.shape
    out = {
        "encoder": case.label,
        "weights": weights,
        "input": list(x.shape),
        "features": list(y.shape),
        "params_M": round(sum(p.numel() for p in enc.parameters()) / 1e6, 1),
        "frames_per_s": round(b * t / dt, 1),
        "ms_per_clip": round(1000 * dt / b, 1),
    }
    if device.type == "cuda":
        out["peak_mem_GiB"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    del enc, x, y
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return out


def count_flops(case: Case) -> dict:
    """GFLOPs per input frame (2 x multiply-adds, as torch's FlopCounterMode counts), no memory used."""
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        enc = from_config(case.name, **{**case.kwargs, "weights": None})
        t = enc.frames_for(case.frames)
        x = torch.empty(1, t, 3, *enc.preprocess.size)
        with FlopCounterMode(display=False) as fc:
            enc(x)
    return {
        "encoder": case.label,
        "params_M": round(sum(p.numel() for p in enc.parameters()) / 1e6, 1),
        "input": list(x.shape),
        "GFLOPs_per_frame": round(fc.get_total_flops() / t / 1e9, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="registry names to run (default: all cases)")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny variants on CPU, to check the script")
    ap.add_argument("--flops", action="store_true", help="count FLOPs/params on the meta device and exit")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    cases = [c for c in CASES if not args.only or c.name in args.only]
    if args.flops:
        results = [count_flops(c) for c in cases]
    else:
        if args.cpu_smoke:
            device, dtype, iters = torch.device("cpu"), torch.bfloat16, 1
        elif torch.cuda.is_available():
            device, dtype, iters = torch.device("cuda"), torch.bfloat16, args.iters
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
            print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, bf16", flush=True)
        else:
            print(
                "No CUDA device: nothing to benchmark. Use --cpu-smoke to check this script on CPU, "
                "or --flops for FLOP and parameter counts."
            )
            return 0
        results = []
        for c in cases:
            try:
                results.append(run(c, device, dtype, iters, args.cpu_smoke))
            except torch.cuda.OutOfMemoryError as e:
                results.append({"encoder": c.label, "error": f"out of memory: {e}".splitlines()[0]})
                torch.cuda.empty_cache()
            print(json.dumps(results[-1]), flush=True)
    if args.flops:
        for r in results:
            print(json.dumps(r))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
