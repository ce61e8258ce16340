#!/usr/bin/env python3
"""Writes the seed corpora fuzz/corpus/<target>/ from the repo's fixtures, examples and test
strings (docs/development.md "Fuzzing"). Run from the repository root; it only adds files
(seed-*), so inputs libFuzzer found and `make fuzz` merged in stay. Deterministic."""
import glob, json, os, re, sys

import yaml  # Debian python3-yaml; only this script needs it

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_BYTES = 8192  # seeds stay small: the fuzzer grows them


def raw_literals(path, must_contain=""):
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    return [m for m in re.findall(r'R"\((.*?)\)"', text, re.S) if must_contain in m]


def head(path, lines):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return "".join(f.readlines()[:lines])


def read(path):
    return open(os.path.join(ROOT, path), encoding="utf-8").read()


def yaml_docs_as_json(path, kind):
    out = []
    for doc in yaml.safe_load_all(read(path)):
        if isinstance(doc, dict) and doc.get("kind") == kind:
            out.append(json.dumps(doc, sort_keys=True))
    return out


def fixtures(prefix):
    return [read(p) for p in sorted(glob.glob(os.path.join(ROOT, "tests/data/fixtures/kube-scheduler-v1.26", prefix + "-*.request.json")))]


GPU_STATE = json.dumps({"version": 1, "devices": {
    "GPU-0": {"health": "Healthy", "podUID": None, "smUtil5m": 42, "memUsedMiB": 1024},
    "GPU-1": {"health": "Unhealthy", "reason": "xid 79", "xid": 79, "podUID": "uid-1"}}})
NODE = json.dumps({"metadata": {"name": "gpu-0", "labels": {"phalanx.io/gpu.product": "NVIDIA-H100"},
                                "annotations": {"phalanx.io/gpu-state": GPU_STATE,
                                                "phalanx.io/gpu-topology": read("tests/data/topology/pcie-4gpu.json")}},
                   "status": {"allocatable": {"nvidia.com/gpu": "4"},
                              "conditions": [{"type": "Ready", "status": "True"}]}})
POD = json.dumps({"metadata": {"name": "w-0", "namespace": "ml", "uid": "u-1",
                               "creationTimestamp": "2026-01-02T03:04:05Z",
                               "labels": {"phalanx.io/gang": "g1", "phalanx.io/queue": "team-a"},
                               "annotations": {"phalanx.io/devices": '{"main":["GPU-0","GPU-1"]}',
                                               "phalanx.io/min-members": "2"}},
                  "spec": {"schedulerName": "phalanx-scheduler", "containers": [
                      {"name": "main", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}})

def webhook_variants():
    base = raw_literals("tests/unit/extender/webhook_test.cc", "AdmissionReview")
    out = list(base)
    for text in base:
        review = json.loads(text)
        pod = review.get("request", {}).get("object", {})
        gated = json.loads(json.dumps(review))
        gated["request"]["object"].setdefault("spec", {})["schedulingGates"] = [{"name": "phalanx.io/gang"}]
        out.append(json.dumps(gated))
        queued = json.loads(json.dumps(review))
        labels = queued["request"]["object"].setdefault("metadata", {}).setdefault("labels", {})
        labels.pop("phalanx.io/gang", None)
        labels["phalanx.io/queue"] = "team-a"
        out.append(json.dumps(queued))
        update = json.loads(json.dumps(review))
        update["request"]["operation"] = "UPDATE"
        out.append(json.dumps(update))
    return out


SEEDS = {
    "extender_filter_args": fixtures("filter") + fixtures("prioritize"),
    "extender_preempt_args": fixtures("preempt"),
    "extender_bind_args": fixtures("bind"),
    "webhook_admission_review": webhook_variants(),
    "gpu_queue": [json.dumps(d) for p in ["manifests/examples/gpuqueues-two-teams.yaml",
                                           "manifests/examples/gpuqueues-hierarchy.yaml"]
                  for d in yaml.safe_load_all(read(p)) if d] + raw_literals("tests/unit/extender/queue_sync_test.cc", "{"),
    "extender_config": raw_literals("tests/unit/extender/config_ledger_test.cc", ":"),
    "topology_annotation": [read(p) for p in sorted(glob.glob(os.path.join(ROOT, "tests/data/topology/*.json")))],
    "node_object": [NODE, GPU_STATE],
    "pod_object": [POD, '{"main":["GPU-0","GPU-1"],"side":["MIG-2g.20gb-0"]}'],
    "device_plugin_annotations": ['{"main":["GPU-a","GPU-b"],"side":["MIG-c"]}', '{"a":[]}'],
    "preempt_request": ['{"requestId":"r-1","deadline":"2026-01-02T03:04:05Z","reason":"preempted by a critical job","preemptor":"ml/p-0"}',
                        '{"requestId":"r-2","deadline":"2026-01-02T03:04:05.123Z"}'],
    "checkpoint_report": ['{"step":1200,"path":"s3://ckpt/run-1/step-1200","committed":true}',
                          'Traceback (most recent call last):\nerror\n{"step":7,"path":"/ckpt/7","committed":false}\n'],
    "training_job": [json.dumps(d) for p in sorted(glob.glob(os.path.join(ROOT, "manifests/examples/trainingjob-*.yaml")))
                     for d in yaml.safe_load_all(read(p)) if d and d.get("kind") == "TrainingJob"],
    "watch_event": raw_literals("tests/unit/core/kube/informer_test.cc", '"type"'),
    "kubeconfig": raw_literals("tests/unit/core/kube/config_test.cc", "clusters"),
    "device_plugin_config": raw_literals("tests/unit/device-plugin/plugin/config_test.cc", "version"),
    "scheduling_policy": [read("tests/data/sim/bad-policy.yaml")] +
                         raw_literals("tests/unit/core/scheduling/policy_and_price_test.cc", ":") +
                         raw_literals("tests/unit/core/scheduling/queues_test.cc", "queues"),
    "price_table": [read("sim/data/prices.json"), read("tests/data/sim/bad-prices.json")],
    "cluster_spec": [read(p) for p in ["tests/data/sim/tiny-cluster.yaml", "sim/data/mig-cluster.yaml",
                                       "sim/data/two-team-cluster.yaml", "sim/data/llm-cluster.yaml"]],
    "trace_phalanx": [head("sim/data/two-team-mix.csv", 12), head("sim/data/mig-mix.csv", 12),
                      head("sim/data/llm-mix.csv", 12), read("tests/data/sim/bad-trace.csv")],
    "trace_philly": [head("tests/data/sim/philly-small.csv", 12), head("sim/data/philly-demo.csv", 12)],
    "trace_openb": [head("tests/data/sim/openb-small.csv", 12)],
    "http_request": ["GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n",
                     "POST /filter?a=1&b=%20x+y HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
                     "POST /mutate-pods HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
                     "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"],
    "metrics_label_value": ["team-a", 'quo"te\\back\nslash', "ns/pod-0", "\xe2\x9c\x93"],
}


def main():
    for target, seeds in sorted(SEEDS.items()):
        d = os.path.join(ROOT, "fuzz", "corpus", target)
        os.makedirs(d, exist_ok=True)
        kept = [s for s in seeds if s and len(s.encode()) <= MAX_BYTES]
        if not kept:
            sys.exit(f"{target}: no seeds")
        for i, s in enumerate(kept):
            with open(os.path.join(d, f"seed-{i:02d}"), "wb") as f:
                f.write(s.encode())
        print(f"{target}: {len(kept)} seeds")


if __name__ == "__main__":
    main()
