#!/usr/bin/python3
"""examples/grafana-rdmans-exporter.json: every query parses as PromQL
(promtool check rules, one recording rule per query, Grafana's variables
replaced by values of their kind) and names only metrics the exporter serves
(the families in prom-sample's output: the exporter's own renderer on a fake
sysfs tree). A broken query is refused by the same check first, so it can
fail. TAP on stdout.   dashboard.py PROM-SAMPLE DASHBOARD.json"""
import json
import re
import subprocess
import sys
import tempfile

sample, path = sys.argv[1], sys.argv[2]
results = []


def check(name, ok, why=""):
    results.append((name, ok, why))


def grafana_to_promql(expr):
    """Grafana's variables as a query would see them: intervals and regexes."""
    expr = re.sub(r"\$(__rate_interval|__interval|__range)\b|\$\{(__rate_interval|__interval|__range)\}", "5m", expr)
    return re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", ".*", expr)


PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
                "unless", "offset", "inf", "nan"}


def metric_names(expr):
    """Metric names in a PromQL expression: identifiers that are not functions,
    keywords, label names or label values."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)          # string literals
    e = re.sub(r"\{[^}]*\}", "", e)                        # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                       # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word, rest = m.group(0), e[m.end():].lstrip()
        if rest.startswith("(") or word.lower() in PROMQL_WORDS:
            continue
        names.add(word)
    return names


def promtool_rules(exprs):
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
        rules = [{"record": f"dashboard:query_{i}", "expr": e} for i, e in enumerate(exprs)]
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)  # JSON is YAML
        f.flush()
        r = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True, text=True)
        return r.returncode, (r.stdout + r.stderr).strip()


served = set()
out = subprocess.run([sample], capture_output=True, text=True, check=True).stdout
for line in out.splitlines():
    if line.startswith("# TYPE "):
        served.add(line.split()[2])
check(f"the exporter serves metric families ({len(served)})", len(served) > 5, str(served))

dash = json.load(open(path))
queries = []  # (where, expr)


def walk(panels):
    for p in panels:
        for t in p.get("targets", []):
            queries.append((f"panel '{p.get('title')}' {t.get('refId')}", t.get("expr", "")))
        walk(p.get("panels", []))


walk(dash.get("panels", []))
variables = []
for v in dash.get("templating", {}).get("list", []):
    if v.get("type") == "query":
        m = re.fullmatch(r"label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)", v["query"])
        check(f"variable ${v['name']} is label_values(SELECTOR, LABEL)", bool(m), v["query"])
        if m:
            variables.append((f"variable ${v['name']}", m.group(1)))
check(f"the dashboard has queries ({len(queries)}) and every panel target has one",
      len(queries) >= 10 and all(e for _, e in queries))

rc, msg = promtool_rules(["sum(rate(rdmans_port_received_bytes_total[5m])"])
check("promtool check rules refuses a query with an unclosed parenthesis", rc != 0, msg)
bogus = metric_names('sum by (pod) (rate(rdmans_port_bytes_total{pod=~".*", namespace="x"}[5m])) * 4')
check("the name check sees a metric the exporter does not serve", bogus == {"rdmans_port_bytes_total"} and
      not bogus <= served, str(bogus))
for where, expr in queries + variables:
    promql = grafana_to_promql(expr)
    rc, msg = promtool_rules([promql])
    check(f"{where} parses as PromQL", rc == 0, f"{promql}\n{msg}")
    names = metric_names(promql)
    check(f"{where} names only metrics the exporter serves ({', '.join(sorted(names))})",
          names and names <= served, f"not served: {sorted(names - served)}")

print(f"1..{len(results)}")
for i, (name, ok, why) in enumerate(results, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {name}")
    if not ok and why:
        for line in str(why).splitlines():
            print(f"# {line}")
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
