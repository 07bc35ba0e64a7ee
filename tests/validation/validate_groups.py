# Per-GPU, per-framework and per-precision throughput MAPE and bias (+ = predicted faster than measured) of a
# `shardplan validate --json` output, grouped by the runs file's fields:
#   build/shardplan validate --runs tests/validation/published_runs.yaml --json > v.json
#   python3 tests/validation/validate_groups.py v.json tests/validation/published_runs.yaml
import json, sys, yaml, collections
runs = {r['id']: r for r in yaml.safe_load(open(sys.argv[2]))['runs']} if isinstance(yaml.safe_load(open(sys.argv[2])), dict) else {r['id']: r for r in yaml.safe_load(open(sys.argv[2]))}
d = json.load(open(sys.argv[1]))
def fam(g):
    g = g.lower()
    for p, n in (('a100', 'A100'), ('h100', 'H100'), ('h800', 'H800'), ('h200', 'H200'), ('gb200', 'GB200'), ('b200', 'B200'), ('v100','V100')):
        if p in g: return n
    return g
groups = collections.defaultdict(list)
for r in d['runs']:
    if r.get('skipped'): continue
    src = runs[r['id']]
    e = (r['predicted_tokens_per_s_per_gpu'] - r['measured_tokens_per_s_per_gpu']) / r['measured_tokens_per_s_per_gpu'] * 100
    dense = not (src['model'].get('moe'))
    groups['gpu ' + fam(src['system']['gpu'])].append(e)
    groups['fw ' + src['framework']].append(e)
    groups['prec ' + str(src['precision'])].append(e)
    if dense: groups['all dense'].append(e)
    if dense and src['framework'] in ('megatron-lm', 'nemo'): groups['megatron-based dense'].append(e)
    if fam(src['system']['gpu']) in ('B200', 'GB200'): groups['blackwell'].append(e)
    groups['all'].append(e)
for k in sorted(groups):
    v = groups[k]
    print('%-26s %4d  MAPE %5.1f%%  bias %+5.1f%%' % (k, len(v), sum(map(abs, v)) / len(v), sum(v) / len(v)))
