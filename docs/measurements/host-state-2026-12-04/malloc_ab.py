# The glibc malloc A/B of docs/validation-log.md (2026-12-04 evening): the bench dataset through a plain
# DataLoader (no capture), 60 batches after 10, at ARGV[2] workers; run as
#   python3 malloc_ab.py plain W   and   MALLOC_MMAP_THRESHOLD_=16777216 MALLOC_TRIM_THRESHOLD_=268435456 python3 malloc_ab.py malloc-tuned W
# (paths as on the VM that day: /work/main). Outputs of 19:43-19:46 UTC in malloc_ab.txt.
import sys, time, os, threading
sys.path.insert(0, "/work/main/capture")
import torch, torch.utils.data as tud
from simreplay_capture.bench.pipeline import BenchDataset, multimodal_collate
from simreplay_capture.bench import run as br
variant = sys.argv[1]
torch.manual_seed(0)
if variant == "cuda":
    torch.cuda.is_available()
if variant == "mem":
    m = br._MemPeak(); m.start()
ds = BenchDataset("/work/main/build/validation-data", "files", 96, 4)
g = torch.Generator(); g.manual_seed(0)
dl = tud.DataLoader(ds, batch_size=8, shuffle=True, drop_last=False, num_workers=int(sys.argv[2]), pin_memory=False,
                    collate_fn=multimodal_collate, generator=g, prefetch_factor=2, persistent_workers=False) if int(sys.argv[2]) else tud.DataLoader(ds, batch_size=8, shuffle=True, drop_last=False, num_workers=0, collate_fn=multimodal_collate, generator=g)
n = 0; t0 = None
while n < 70:
    for b in dl:
        n += 1
        if n == 10: t0 = time.perf_counter()
        if n >= 70: break
print(variant, "w" + sys.argv[2], "samples/s %.1f" % (60 * 8 / (time.perf_counter() - t0)))
