#!/usr/bin/python3
"""The test API server's authorizer: RBAC as deploy/rbac.yaml writes it.

apiextensions-apiserver serves no RBAC of its own: it asks another server
(--authorization-kubeconfig) each SubjectAccessReview, as it would ask
kube-apiserver. This answers them from the manifests' ClusterRoleBindings
and ClusterRoles: a ServiceAccount subject is the user
system:serviceaccount:NS:NAME; a rule allows when its apiGroups, resources
and verbs hold the request's. Anything else is denied with RBAC's reason.
system:masters never reaches it (the server allows that group itself).
Usage: rbac-authorizer.py PORT MANIFEST... (plain HTTP on 127.0.0.1)."""
import http.server
import json
import sys

import yaml

docs = [d for f in sys.argv[2:] for d in yaml.safe_load_all(open(f)) if d]
roles = {d["metadata"]["name"]: d.get("rules", []) for d in docs if d["kind"] == "ClusterRole"}
grants = {}  # user -> rules
for b in (d for d in docs if d["kind"] == "ClusterRoleBinding"):
    for s in b.get("subjects", []):
        user = (f"system:serviceaccount:{s['namespace']}:{s['name']}" if s["kind"] == "ServiceAccount"
                else s["name"])
        grants.setdefault(user, []).extend(roles.get(b["roleRef"]["name"], []))


def allowed(user, attrs):
    def holds(values, want):
        return "*" in values or want in values
    return any(holds(r.get("apiGroups", []), attrs.get("group", "")) and
               holds(r.get("resources", []), attrs.get("resource", "")) and
               holds(r.get("verbs", []), attrs.get("verb", "")) for r in grants.get(user, []))


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        spec = review["spec"]
        ok = allowed(spec.get("user", ""), spec.get("resourceAttributes", {}))
        review["status"] = {"allowed": ok} if ok else {
            "allowed": False, "reason": "RBAC: no ClusterRoleBinding in deploy/rbac.yaml grants it"}
        out = json.dumps(review).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
