#!/usr/bin/env python3
"""Writes the fuzz seed corpora (fuzz/corpus/<target>/) and dictionaries (fuzz/dict/<target>.dict) from
the project's test inputs and examples. Deterministic: run it again after a format changes and commit
the result. Usage: fuzz/make_seeds.py  (from anywhere)."""
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import struct
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
DICT = os.path.join(ROOT, "fuzz", "dict")


def write_seed(target, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def write_dict(target, tokens):
    os.makedirs(DICT, exist_ok=True)
    with open(os.path.join(DICT, target + ".dict"), "w") as f:
        f.write("# libFuzzer dictionary for %s: keys and values of the format (written by make_seeds.py)\n" % target)
        for t in sorted(set(tokens)):
            esc = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "\\x%02X" % ord(c)
                          for ch in t.encode("utf-8").decode("latin-1") for c in ch)
            f.write('"%s"\n' % esc)


def keys_of(obj, out):
    """Every key and every string value of a JSON document, quoted as they appear in JSON text."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add('"%s"' % k)
            out.add('"%s":' % k)
            keys_of(v, out)
    elif isinstance(obj, list):
        for v in obj:
            keys_of(v, out)
    elif isinstance(obj, str) and len(obj) < 40:
        out.add('"%s"' % obj)


JSON_TOKENS = ["{", "}", "[", "]", ":", ",", "null", "true", "false", "-1", "0", "1e308", "1e400", "-1e400",
               "9223372036854775807", "9223372036854775808", "18446744073709551616", "-9223372036854775808",
               "0.5", "NaN", "Infinity", "\\u0000", "\\ud800", "\n"]


def trace_seeds():
    lines = gzip.open(os.path.join(ROOT, "examples/quickstart/trace.jsonl.gz"), "rt").read().splitlines()
    header = lines[0]
    by_type = {}
    for line in lines[1:]:
        by_type.setdefault(json.loads(line)["type"], []).append(line)
    small_header = '{"type":"header","schema":"simreplay.trace/1","manifest":{"source":"test"}}'
    body = []
    for t in sorted(by_type):
        body += by_type[t][:2]
    seeds = [
        header + "\n" + "\n".join(body) + "\n",                       # every record type of a real capture
        small_header + "\n" + "\n".join(body[:4]) + "\n",
        small_header + "\n" + "\n".join(body) + "\n" + body[0][: len(body[0]) // 2],  # killed writer
        small_header + "\n",
        small_header + '\n{"type":"future","x":1}\n{"type":"event","name":"x"}\n',
        # the inputs of tests/replay/trace_reader_test.cc
        small_header + '\n{"type":"sample","rank":0,"epoch":0,"index":3,"batch":0,"worker":1,"t_start_ns":10,'
        '"read_ns":100,"decode_ns":200,"augment_ns":300,"read_bytes":1000,"out_bytes":2000,"format":"jpeg",'
        '"width":64,"height":48,"frames":1}\n',
        small_header + '\n{"type":"batch","rank":0,"epoch":0,"batch":0,"worker":0,"size":8,"collate_ns":5,'
        '"t_ready_ns":9,"wait_ns":1,"pin_ns":2,"h2d_ns":3,"h2d_bytes":4,"t_next_start_ns":12,"bytes":7}\n'
        '{"type":"step","rank":0,"step":0,"t_start_ns":0,"compute_ns":1,"comm_ns":0,"step_ns":5,"micro_batches":1}\n',
        small_header + '\n{"type":"step","rank":0,"step":0,"t_start_ns":0,"compute_ns":70,"comm_ns":3,"step_ns":73,'
        '"micro_batches":1,"cpu_ns":16,"accel_ns":50}\n',
    ]
    tokens = set(JSON_TOKENS)
    for line in [header] + body:
        keys_of(json.loads(line), tokens)
    tokens |= {'"simreplay.trace/1"', '"unsplit"', '"split"', '"footer"', '"event"', '"t_next_start_ns"', '"bytes"',
               '"cpu_ns"', '"accel_ns"'}
    for s in seeds:
        write_seed("trace_plain", s)
        # gzip target: mode byte 0 (compress here), cut 0xffff (whole) / 0x8000 (half), raw gzip (mode 1)
        write_seed("trace_gzip", b"\x00\xff\xff" + s.encode())
        write_seed("trace_gzip", b"\x02\xff\xff" + s.encode())
        write_seed("trace_gzip", b"\x00\x00\x80" + s.encode())
        write_seed("trace_gzip", b"\x01\xff\xff" + gzip.compress(s.encode(), mtime=0))
    write_dict("trace_plain", tokens)
    write_dict("trace_gzip", tokens)


KINETO_KEEP = re.compile(r"^(ProfilerStep#|enumerate\(DataLoader\)|aten::(conv|linear|embedding_bag|pin_memory|"
                         r"_pin_memory)|Memcpy|nccl|ncclKernel|cudaMemcpy)")


def shrink_kineto(doc, max_events):
    """The first steps of a profile, fewest events that still import: step markers, DataLoader calls,
    the shape-carrying ops, copies and kernels."""
    events = [e for e in doc.get("traceEvents", []) if isinstance(e, dict)]
    steps = sorted((e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")),
                   key=lambda e: e.get("ts", 0))[:2]
    if not steps:
        return None
    t0 = steps[0]["ts"]
    t1 = steps[-1]["ts"] + steps[-1].get("dur", 0)
    kept = list(steps)
    per_name = {}
    for e in events:
        if e in steps:
            continue
        name = str(e.get("name", ""))
        if e.get("ph") == "X" and t0 <= e.get("ts", -1) <= t1 and KINETO_KEEP.match(name):
            per_name[name] = per_name.get(name, 0) + 1
            if per_name[name] <= 4:
                kept.append(e)
        elif e.get("cat") == "Kernel" and t0 <= e.get("ts", -1) <= t1 and len(kept) < max_events // 2:
            kept.append(e)
        if len(kept) >= max_events:
            break
    out = {k: v for k, v in doc.items() if k != "traceEvents"}
    out["traceEvents"] = kept
    return out


def kineto_seeds():
    tokens = set(JSON_TOKENS)
    docs = []
    with gzip.open(os.path.join(ROOT, "tests/data/kineto",
                                "kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz")) as f:
        docs.append(json.load(f))
    with tarfile.open(os.path.join(ROOT, "tests/data/kineto/param_dlrm_kineto_8ranks.tar.gz")) as tar:
        for m in sorted(tar.getmembers(), key=lambda m: m.name)[:3]:
            if m.isfile() and m.name.endswith(".json"):
                docs.append(json.load(tar.extractfile(m)))
    for doc in docs:
        for max_events in (40, 150):
            small = shrink_kineto(doc, max_events)
            if small is None:
                continue
            keys_of(small, tokens)
            write_seed("kineto", json.dumps(small, separators=(",", ":")))
    write_seed("kineto", '{"traceEvents":[{"ph":"X","name":"ProfilerStep#1","ts":0,"dur":10}]}')
    tokens |= {'"ProfilerStep#1"', '"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"',
               '"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"', '"Input Dims"',
               '"distributedInfo"', '"deviceProperties"', '"Memcpy HtoD (Pageable -> Device)"', '"ph"', '"X"',
               '"ts"', '"dur"', '"cat"', '"args"', '"Kernel"', '"cpu_op"', '"user_annotation"', '"gpu_memcpy"',
               '"kernel"', '"memory bandwidth (GB/s)"', '"bytes"', '"rank"', '"world_size"', '"aten::conv2d"',
               '"aten::linear"', '"aten::embedding_bag"', '"ncclKernel_AllReduce"', '"aten::pin_memory"'}
    write_dict("kineto", tokens)


def scenario_seeds():
    tokens = set(JSON_TOKENS)
    text = open(os.path.join(ROOT, "examples/quickstart/scenario.json")).read()
    doc = json.loads(text)
    keys_of(doc, tokens)
    write_seed("scenario", text)
    write_seed("scenario", json.dumps({k: v for k, v in doc.items() if k != "sweep"}))
    write_seed("scenario", '{"trace":"t.jsonl.gz","loader":{"num_workers":2,"batch_size":8},"train":{"steps":4},'
               '"sweep":{"loader.num_workers":[0,1,2],"loader.batch_size":[4,8]}}')
    for f in ("docs/scenario-format.md",):
        for m in re.finditer(r"```json\n(.*?)```", open(os.path.join(ROOT, f)).read(), re.S):
            try:
                d = json.loads(m.group(1))
            except ValueError:
                continue
            keys_of(d, tokens)
            write_seed("scenario", m.group(1))
    for m in re.finditer(r"`([a-z_]+(\.[a-z_]+)+)`", open(os.path.join(ROOT, "docs/scenario-format.md")).read()):
        tokens.add('"%s"' % m.group(1))
    write_dict("scenario", tokens)


def model_seeds():
    tokens = set(JSON_TOKENS)
    text = open(os.path.join(ROOT, "examples/quickstart/model.json")).read()
    doc = json.loads(text)
    keys_of(doc, tokens)
    write_seed("model", json.dumps(doc, separators=(",", ":")))  # compact: fuzzing time goes to mutations
    write_seed("model", '{"schema":"simreplay.model/1","cpu":{"pin_bytes_per_s":4e9},"gpu":{"step_time_s":0.01}}')
    write_seed("model", '{"schema":"simreplay.model/1","storage":{"mode":"model","bandwidth_bytes_per_s":'
               '{"value":1e9,"assumed":false,"source":"probe"}}}')
    tokens |= {'"simreplay.model/1"', '"value"', '"assumed"', '"source"', '"recorded"', '"model"'}
    write_dict("model", tokens)


def probe_seeds():
    tokens = set(JSON_TOKENS)
    for m in re.finditer(r"```json\n(.*?)```", open(os.path.join(ROOT, "docs/probe-format.md")).read(), re.S):
        try:
            d = json.loads(m.group(1))
        except ValueError:
            continue
        d["fit"]["random"] = dict(d["fit"]["sequential"])
        keys_of(d, tokens)
        write_seed("probe", json.dumps(d, indent=2))
        d["fit"]["random"] = None
        write_seed("probe", json.dumps(d))
    write_seed("probe", '{"schema":"simreplay.probe/1","fit":{"sequential":{"latency_s":1e-5,'
               '"bandwidth_bytes_per_s":1e9,"max_useful_concurrency":4},"page_cache":{"bandwidth_bytes_per_s":6e9}}}')
    tokens |= {'"simreplay.probe/1"', '"fit"', '"random"', '"sequential"', '"page_cache"', '"latency_s"',
               '"bandwidth_bytes_per_s"', '"max_useful_concurrency"', '"cache_drop"'}
    write_dict("probe", tokens)


def network_probe_seeds():
    """probe-network.json (docs/probe-format.md, "simreplay.probe-network/1"): what calibrate reads."""
    tokens = set(JSON_TOKENS)
    doc = {"schema": "simreplay.probe-network/1", "backend": "gloo", "world_size": 2, "nodes": 1,
           "ranks": [{"rank": 0, "node": 0, "interface": {"name": "eth0", "address": "10.0.0.1", "speed_mbps": 1000,
                                                          "tc_rate_bits_per_s": 1e9}},
                     {"rank": 1, "node": 0, "interface": {"name": "eth0", "address": "10.0.0.2", "speed_mbps": 1000,
                                                          "tc_rate_bits_per_s": None}}],
           "settings": {"ops": ["all_reduce"], "min_bytes": 1024, "max_bytes": 65536, "factor": 4},
           "implementation": {"all_reduce": "torch.distributed.all_reduce"},
           "results": [{"op": op, "bytes": b, "iters": 10, "time_s": 5e-5 + b * 1e-9,
                        "algbw_bytes_per_s": b / (5e-5 + b * 1e-9), "busbw_bytes_per_s": b / (5e-5 + b * 1e-9)}
                       for op in ("all_reduce", "all_gather", "broadcast") for b in (1024, 4096, 65536)],
           "fit": {}, "manifest": {"source": "probe"}, "notes": []}
    keys_of(doc, tokens)
    tokens |= {'"simreplay.probe-network/1"', '"reduce_scatter"', '"sendrecv"', '"nccl"'}
    write_seed("network_probe", json.dumps(doc))
    # with CPU readings over bandwidth-bound sizes (the collective's host CPU fit)
    cpu_doc = dict(doc, results=[{"op": "all_reduce", "bytes": b, "iters": 4, "time_s": 1e-3 + b * 8e-9,
                                  "cpu_s": 5e-4 + b * 1e-9, "host_cpu_s_per_rank": 6e-4 + b * 2e-9}
                                 for b in (1024, 1 << 16, 1 << 20, 1 << 24)])
    keys_of(cpu_doc, tokens)
    write_seed("network_probe", json.dumps(cpu_doc))
    doc["results"] = doc["results"][:2]
    del doc["ranks"]
    write_seed("network_probe", json.dumps(doc, indent=1))
    write_dict("network_probe", tokens)


def cpu_probe_seeds():
    """probe-cpu.json (docs/probe-cpu.md, "simreplay.probe-cpu/1"): the documented example and variants."""
    tokens = set(JSON_TOKENS)
    point = {"workers": 1, "round": 0, "samples": 312, "wall_s": 2.0, "throughput_samples_per_s": 156.0,
             "getitem_wall_s_mean": 0.0062, "getitem_cpu_s_mean": 0.006, "main_cpu_s": 0.21, "workers_cpu_s": 1.93,
             "host_busy_cores": 1.2, "loadavg_1m": [0.4, 0.5], "wake_sleeps": 9, "wake_delay_s_mean": 0.00013}
    points = [dict(point, workers=k, throughput_samples_per_s=150.0 * min(k, 2),
                   wake_delay_s_mean=0.0001 + 0.0003 * max(0, k - 1)) for k in (1, 2, 3, 4)]
    doc = {"schema": "simreplay.probe-cpu/1", "host": {"cores": 2, "cpu_model": "AMD EPYC"},
           "method": {"seconds_per_point": 2.0, "rounds": 1, "wake_sleep_s": 0.02, "wake_every": 4},
           "points": points, "skipped_points": [], "baseline_wake": {"sleeps": 25, "delay_s_mean": 0.00018},
           "total_s": 31.2}
    keys_of(doc, tokens)
    tokens |= {'"simreplay.probe-cpu/1"'}
    write_seed("cpu_probe", json.dumps(doc))
    write_seed("cpu_probe", json.dumps(dict(doc, points=points[:1], baseline_wake={"delay_s_mean": 0}), indent=1))
    older = dict(doc, points=[{k: v for k, v in p.items() if not k.startswith("wake")} for p in points])
    del older["baseline_wake"]
    write_seed("cpu_probe", json.dumps(older))
    write_dict("cpu_probe", tokens)


def spec_seeds():
    tokens = set(JSON_TOKENS)
    for name in sorted(os.listdir(os.path.join(ROOT, "validation/suite"))):
        if name.endswith(".json"):
            text = open(os.path.join(ROOT, "validation/suite", name)).read()
            keys_of(json.loads(text), tokens)
            write_seed("experiment_spec", text)
    write_seed("experiment_spec", '{"schema": "simreplay.experiment/1", "mode": "ab", "cases": []}')
    tokens |= {'"simreplay.experiment/1"', '"ab"', '"suite"'}
    write_dict("experiment_spec", tokens)


def plan_seeds():
    """Plan files (docs/plan-format.md): the example and minimal variants."""
    tokens = set(JSON_TOKENS)
    text = open(os.path.join(ROOT, "examples/plan/plan.json")).read()
    doc = json.loads(text)
    keys_of(doc, tokens)
    write_seed("plan", text)
    small = {"scenario": "s.json", "job": {"target": {"steps": 1000}, "model": {"parameters": 1e8}},
             "candidates": {"gpu": ["h100-sxm"], "nodes": [1, 2], "gpus_per_node": 8}}
    write_seed("plan", json.dumps(small))
    keys_of(small, tokens)
    tokens |= {'"auto"', '"ddp"', '"fsdp"', '"adam"', '"sgd"', '"bf16"', '"fp32"', '"scenario_by_gpu"',
               '"uncertainty"', '"simulation"', '"preflight"', '"catalogue"'}
    write_dict("plan", tokens)


def main():
    for d in (CORPUS, DICT):
        shutil.rmtree(d, ignore_errors=True)
    trace_seeds()
    kineto_seeds()
    scenario_seeds()
    model_seeds()
    probe_seeds()
    spec_seeds()
    network_probe_seeds()
    cpu_probe_seeds()
    plan_seeds()
    for t in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, t))
        size = sum(os.path.getsize(os.path.join(CORPUS, t, f)) for f in files)
        print("%-16s %3d seeds %8d bytes" % (t, len(files), size))


if __name__ == "__main__":
    main()
