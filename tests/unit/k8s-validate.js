// Validates Kubernetes objects against the API's OpenAPI schemas, as carried
// by the npm packages kubernetes-models and @kubernetes-models/validate
// (installed by tools/install-deps.sh under RDMANS_NPM_DIR). Used by
// tests/unit/manifests.py.
//
// stdin:  [{"where": "deploy/daemonset.yaml DaemonSet rdmans", "doc": {...}}, ...]
// stdout: [{"where": ..., "checked": "apps/v1 DaemonSet", "errors": ["..."]}, ...]
//
// Kinds the packages know are validated whole. Custom resources (a
// NetworkAttachmentDefinition, a PyTorchJob) are not in them: their metadata
// is validated as ObjectMeta and every pod template inside them (any object
// under a "template" key) as a PodTemplateSpec.
"use strict";
const path = require("path");
const fs = require("fs");

const npm = process.env.RDMANS_NPM_DIR || "/var/cache/rdmans-npm";
const models = path.join(npm, "node_modules", "kubernetes-models");
const need = (p) => require(path.join(models, p));

function errorsOf(Model, data) {
  try {
    new Model(data).validate();
    return [];
  } catch (e) {
    // ValidationError: one line per failed keyword, with its path
    const list = e.errors || [];
    return list.length
      ? list.map((x) => `${x.instancePath || "/"} ${x.message}${x.params ? " " + JSON.stringify(x.params) : ""}`)
      : [String(e.message || e)];
  }
}

function modelFor(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : [null, apiVersion];
  const rel = group ? path.join(group, version, kind) : path.join(version, kind);
  if (!fs.existsSync(path.join(models, rel + ".js"))) return null;
  return need(rel)[kind];
}

function templates(node, at, out) {
  if (Array.isArray(node)) node.forEach((x, i) => templates(x, `${at}/${i}`, out));
  else if (node && typeof node === "object")
    for (const [k, v] of Object.entries(node)) {
      if (k === "template" && v && typeof v === "object" && !Array.isArray(v)) out.push([`${at}/template`, v]);
      else templates(v, `${at}/${k}`, out);
    }
  return out;
}

const input = JSON.parse(fs.readFileSync(0, "utf8"));
const { ObjectMeta } = require(path.join(npm, "node_modules", "@kubernetes-models", "apimachinery",
  "apis", "meta", "v1", "ObjectMeta"));
const { PodTemplateSpec } = need("v1/PodTemplateSpec");
const results = input.map(({ where, doc }) => {
  const Model = modelFor(String(doc.apiVersion || ""), String(doc.kind || ""));
  if (Model) return { where, checked: `${doc.apiVersion} ${doc.kind}`, errors: errorsOf(Model, doc) };
  const errors = errorsOf(ObjectMeta, doc.metadata || {}).map((e) => `/metadata${e}`);
  const found = templates(doc.spec || {}, "/spec", []);
  for (const [at, t] of found) errors.push(...errorsOf(PodTemplateSpec, t).map((e) => `${at}${e}`));
  return { where, checked: `custom resource: ObjectMeta + ${found.length} PodTemplateSpec`, errors };
});
process.stdout.write(JSON.stringify(results));
