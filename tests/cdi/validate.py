#!/usr/bin/python3
"""Validates a CDI spec: the CDI JSON schema, then the rules SPEC.md states in prose.

Usage: validate.py SPEC.json   (exit 0 when valid; each problem on stderr)
"""
import json
import os
import re
import sys

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
KNOWN_VERSIONS = ["0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0"]
HOOK_NAMES = {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"}
NAME = r"[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?"
KIND = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9.-]*[a-z0-9])?)*/" + NAME + "$")
DEVICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


def version_tuple(v):
    return tuple(int(x) for x in v.split("."))


def minimum_version(spec, all_edits):
    edits = [e for _, e in all_edits]
    devices = spec.get("devices", [])
    if any(e.get("netDevices") for e in edits):
        return "1.1.0"
    if any(e.get("intelRdt") is not None or e.get("additionalGids") for e in edits):
        return "0.7.0"
    kind = spec.get("kind", "")
    if spec.get("annotations") or any(d.get("annotations") for d in devices) or \
            ("/" in kind and "." in kind.split("/", 1)[1]):
        return "0.6.0"
    if any(d.get("name", "x")[:1].isdigit() for d in devices) or \
            any("hostPath" in n for e in edits for n in e.get("deviceNodes", [])):
        return "0.5.0"
    if any("type" in m for e in edits for m in e.get("mounts", [])):
        return "0.4.0"
    return "0.3.0"


def main(path):
    problems = []
    with open(path) as f:
        spec = json.load(f)
    with open(os.path.join(HERE, "schema.json")) as f:
        schema = json.load(f)
    with open(os.path.join(HERE, "defs.json")) as f:
        defs = json.load(f)
    resolver = jsonschema.RefResolver(base_uri="file://" + HERE + "/", referrer=schema,
                                      store={"defs.json": defs, "file://" + HERE + "/defs.json": defs})
    validator = jsonschema.Draft7Validator(schema, resolver=resolver)
    for e in validator.iter_errors(spec):
        problems.append("schema: %s at %s" % (e.message, "/".join(str(p) for p in e.path)))

    edits_schema = {"$ref": "defs.json#/definitions/containerEdits"}
    edit_validator = jsonschema.Draft7Validator(edits_schema, resolver=resolver)
    all_edits = []
    if "containerEdits" in spec:
        all_edits.append(("containerEdits", spec["containerEdits"]))
    for d in spec.get("devices", []):
        all_edits.append(("device %s" % d.get("name"), d.get("containerEdits", {})))

    version = spec.get("cdiVersion", "")
    if version not in KNOWN_VERSIONS:
        problems.append("cdiVersion %r is not a released CDI version %s" % (version, KNOWN_VERSIONS))
    if not KIND.match(spec.get("kind", "")):
        problems.append("kind %r is not vendor.com/class" % spec.get("kind"))
    elif "." in spec["kind"].split("/", 1)[1] and version_tuple(version or "0.0.0") < (0, 6, 0):
        problems.append("a dot in the kind's class needs cdiVersion 0.6.0")
    names = [d.get("name", "") for d in spec.get("devices", [])]
    if not names:
        problems.append("no devices")
    if len(set(names)) != len(names):
        problems.append("duplicate device names %s" % names)
    for n in names:
        if not DEVICE.match(n):
            problems.append("device name %r is not valid" % n)
        elif not n[0].isalpha() and version_tuple(version or "0.0.0") < (0, 5, 0):
            problems.append("device name %r starting with a digit needs cdiVersion 0.5.0" % n)

    for where, edits in all_edits:
        for e in edit_validator.iter_errors(edits):
            problems.append("%s: %s" % (where, e.message))
        for env in edits.get("env", []):
            if not isinstance(env, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", env):
                problems.append("%s: env entry %r is not NAME=VALUE" % (where, env))
        for node in edits.get("deviceNodes", []):
            if not node.get("path", "").startswith("/"):
                problems.append("%s: device node path %r is not absolute" % (where, node.get("path")))
            if "hostPath" in node and version_tuple(version or "0.0.0") < (0, 5, 0):
                problems.append("%s: hostPath needs cdiVersion 0.5.0" % where)
            if node.get("type", "c") not in ("c", "b", "u", "p"):
                problems.append("%s: device node type %r" % (where, node.get("type")))
        for hook in edits.get("hooks", []):
            if hook.get("hookName") not in HOOK_NAMES:
                problems.append("%s: hook name %r" % (where, hook.get("hookName")))
            if not hook.get("path", "").startswith("/"):
                problems.append("%s: hook path %r is not absolute" % (where, hook.get("path")))
        for m in edits.get("mounts", []):
            if "type" in m and version_tuple(version or "0.0.0") < (0, 4, 0):
                problems.append("%s: mount type needs cdiVersion 0.4.0" % where)
    if (spec.get("annotations") or any(d.get("annotations") for d in spec.get("devices", []))) \
            and version_tuple(version or "0.0.0") < (0, 6, 0):
        problems.append("annotations need cdiVersion 0.6.0")

    # The lowest version its content needs, as the CDI library computes it
    # (pkg/cdi/version.go MinimumRequiredVersion): a runtime whose library
    # is older than the declared version refuses the spec (podman 4.3 and
    # containerd 1.7 ship CDI 0.5.x), so nothing newer than needed.
    need = minimum_version(spec, all_edits)
    if version in KNOWN_VERSIONS and version_tuple(version) > version_tuple(need):
        problems.append("cdiVersion %s, but its content needs only %s: runtimes with an older "
                        "CDI library (0.5.x: podman 4.3, containerd 1.7) refuse it" % (version, need))

    for p in problems:
        print("%s: %s" % (path, p), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
