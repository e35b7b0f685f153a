#!/usr/bin/python3
"""The test API server's authenticator and authorizer: bearer tokens from a
file, RBAC as deploy/rbac.yaml writes it.

apiextensions-apiserver has neither of its own: it asks another server, as it
would ask kube-apiserver, a TokenReview for each bearer token
(--authentication-kubeconfig) and a SubjectAccessReview for each request
(--authorization-kubeconfig). This answers both.

TokenReview: the tokens file (--tokens), lines "TOKEN USERNAME [GROUP,...]",
read again at each review so that a test revokes or adds a token by
rewriting it; a token not there is not authenticated.

SubjectAccessReview: from the manifests' ClusterRoleBindings and
ClusterRoles: a ServiceAccount subject is the user
system:serviceaccount:NS:NAME; a rule allows when its apiGroups, resources
and verbs hold the request's. Anything else is denied with RBAC's reason.
system:masters never reaches it (the server allows that group itself).
Usage: rbac-authorizer.py PORT [--tokens FILE] MANIFEST... (plain HTTP on 127.0.0.1)."""
import http.server
import json
import sys

import yaml

args = sys.argv[2:]
tokens_file = None
if args[:1] == ["--tokens"]:
    tokens_file, args = args[1], args[2:]
docs = [d for f in args for d in yaml.safe_load_all(open(f)) if d]
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


def token_user(token):
    """(username, groups) of token in the tokens file, or None"""
    if not tokens_file or not token:
        return None
    try:
        lines = open(tokens_file).read().splitlines()
    except FileNotFoundError:
        return None
    for line in lines:
        f = line.split()
        if len(f) >= 2 and not f[0].startswith("#") and f[0] == token:
            return f[1], [g for g in (f[2] if len(f) > 2 else "").split(",") if g]
    return None


def token_review(review):
    spec = review.get("spec", {})
    who = token_user(spec.get("token", ""))
    if who is None:
        return {"authenticated": False, "error": "the token is not in the tokens file"}
    # the audiences asked for, as an authenticator that accepts them says
    status = {"authenticated": True, "user": {"username": who[0], "groups": who[1]}}
    if spec.get("audiences"):
        status["audiences"] = spec["audiences"]
    return status


def access_review(review):
    spec = review["spec"]
    ok = allowed(spec.get("user", ""), spec.get("resourceAttributes", {}))
    return {"allowed": ok} if ok else {
        "allowed": False, "reason": "RBAC: no ClusterRoleBinding in deploy/rbac.yaml grants it"}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.split("?")[0].endswith("/tokenreviews"):
            review["status"] = token_review(review)
        else:
            review["status"] = access_review(review)
        out = json.dumps(review).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
