# MoE rows of a `shardplan validate --json` output: throughput MAPE and bias (+ = predicted faster than measured)
# per regime as issue 13's acceptance groups them (EP inside the NVLink domain when ep x etp <= the system's
# nvlink_domain, else across nodes), per model and per GPU, then one line per row:
#   build/shardplan validate --runs tests/validation/published_runs.yaml --json > v.json
#   python3 tests/validation/moe_groups.py v.json tests/validation/published_runs.yaml
import collections, json, sys, yaml

doc = yaml.safe_load(open(sys.argv[2]))
runs = {r['id']: r for r in (doc['runs'] if isinstance(doc, dict) else doc)}
groups, rows = collections.defaultdict(list), []
for r in json.load(open(sys.argv[1]))['runs']:
    src = runs[r['id']]
    if r.get('skipped') or not src['model'].get('moe'): continue
    e = (r['predicted_tokens_per_s_per_gpu'] / r['measured_tokens_per_s_per_gpu'] - 1) * 100
    p, s = src['plan'], src['system']
    width = (p.get('ep') or 1) * (p.get('etp') or 1)
    regime = 'EP in NVLink' if width <= (s.get('nvlink_domain') or s['gpus_per_node']) else 'EP across nodes'
    for k in ('all MoE', regime, 'model ' + src['model']['name'], 'gpu ' + s['gpu']): groups[k].append(e)
    rows.append((src['model']['name'], s['gpu'], regime, r['id'], e))
order = ['all MoE', 'EP in NVLink', 'EP across nodes']
for k in order + sorted(k for k in groups if k not in order):
    v = groups[k]
    print('%-24s %2d  MAPE %5.1f%%  bias %+5.1f%%' % (k, len(v), sum(map(abs, v)) / len(v), sum(v) / len(v)))
for m, g, reg, i, e in sorted(rows):
    print('  %-16s %-16s %-16s %+6.1f%%  %s' % (m, g, reg, e, i))
