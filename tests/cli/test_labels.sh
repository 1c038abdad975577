#!/usr/bin/env bash
# test_labels.sh BUILD_DIR - the labels a build's tests carry: the unit
# label holds C tests only (no test run by node, none needing npm
# packages), the Node-run schema oracles carry oracle, tests from devboxd/
# carry devboxd, and every test has one of the main labels.
set -uo pipefail

ctest --test-dir "$1" --show-only=json-v1 2>/dev/null | python3 -c '
import json, sys
main = {"unit", "oracle", "script", "sandbox", "e2e", "abi", "conformance", "fuzz"}
bad = []
seen = {}
for t in json.load(sys.stdin)["tests"]:
    labels = []
    for p in t.get("properties", []):
        if p["name"] == "LABELS":
            labels = p["value"]
    cmd = t.get("command") or [""]
    exe = cmd[0].rsplit("/", 1)[-1]
    seen[t["name"]] = labels
    if len(main.intersection(labels)) != 1:
        bad.append("%s: labels %s (one of %s wanted)" % (t["name"], labels, sorted(main)))
    if "unit" in labels and exe in ("node", "npm", "npx"):
        bad.append("%s: unit but runs %s" % (t["name"], exe))
for name in ("test_schema_suite", "test_schema_ajv"):
    if name in seen and seen[name] != ["oracle"]:
        bad.append("%s: labels %s, oracle wanted" % (name, seen[name]))
for name in ("test_rmtree", "test_devboxd_layers", "test_ptyd"):
    if name in seen and "devboxd" not in seen[name]:
        bad.append("%s: no devboxd label" % name)
for name in ("test_exec", "test_rlclient", "test_dispatcher"):
    if name in seen and seen[name] != ["unit"]:
        bad.append("%s: labels %s, unit wanted" % (name, seen[name]))
if not seen:
    bad.append("no tests listed")
for b in bad:
    print("FAIL - " + b)
print("%d tests, %d problems" % (len(seen), len(bad)))
sys.exit(1 if bad else 0)
'
