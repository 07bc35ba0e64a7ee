#!/usr/bin/env python3
"""Independent check of an emitted launch unit: parses it with the format's own parser (bash -n, tomllib, yaml,
json, Python's compiler) and re-checks the framework rules on the parsed flags and keys. This file restates the
rules from the frameworks' sources on its own, separately from modeler/framework_rules.cc and the emitters, so an
emitter bug and a rule bug have to agree to slip through.

usage: check_launch.py FORMAT FILE --gpus N --layers L
FORMAT: megatron | deepspeed | torchtitan | torchtitan-toml | nemo. Exit 0 when it parses and breaks no rule;
1 with one line per violation otherwise.
"""
import argparse
import json
import re
import shlex
import subprocess
import sys
import types

problems = []


def rule(ok, why):
    if not ok:
        problems.append(why)


def bash_arrays(text):
    """NAME=( ... ) arrays of a script as flag -> list of values (shlex-split, quotes removed)."""
    arrays = {}
    for m in re.finditer(r"^([A-Z_]+)=\(\n(.*?)^\)", text, re.S | re.M):
        words = shlex.split(m.group(2), comments=True)
        flags, current = {}, None
        for w in words:
            if w.startswith("--"):
                current = w
                flags[current] = []
            elif current is not None:
                flags[current].append(w)
        arrays[m.group(1)] = flags
    return arrays


def check_bash_syntax(path):
    r = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
    rule(r.returncode == 0, "bash -n: " + r.stderr.strip())


def world_of_script(text):
    nodes = int(re.search(r"^NNODES=(\d+)$", text, re.M).group(1))
    per = int(re.search(r"^GPUS_PER_NODE=(\d+)$", text, re.M).group(1))
    return nodes * per


def val(flags, name, default=None, cast=int):
    if name not in flags:
        return default
    v = flags[name]
    return cast(v[0]) if v else True


def check_megatron(text, gpus, layers):
    # Megatron-LM megatron/training/arguments.py validate_args and megatron/core (transformer_config.py,
    # model_parallel_config.py, pipeline_parallel_layer_layout.py), main d98e8a6.
    a = bash_arrays(text)
    f = {}
    for name in ("MODEL_ARGS", "PLAN_ARGS", "DATA_ARGS"):
        rule(name in a, "missing array " + name)
        f.update(a.get(name, {}))
    rule("torchrun" in text and "pretrain_gpt.py" in text, "no torchrun launch of pretrain_gpt.py")
    world = world_of_script(text)
    rule(world == gpus, f"launcher starts {world} processes, the plan is for {gpus} GPUs")
    tp = val(f, "--tensor-model-parallel-size", 1)
    pp = val(f, "--pipeline-model-parallel-size", 1)
    cp = val(f, "--context-parallel-size", 1)
    ep = val(f, "--expert-model-parallel-size", 1)
    sp = "--sequence-parallel" in f
    L = val(f, "--num-layers")
    rule(L == layers, f"--num-layers {L}, the model has {layers}")
    rule(world % (tp * pp * cp) == 0, "tp x pp x cp does not divide the world")
    dp = world // (tp * pp * cp)
    mbs, gbs = val(f, "--micro-batch-size", 1), val(f, "--global-batch-size")
    rule(gbs is not None and gbs % (mbs * dp) == 0, f"global batch {gbs} not a multiple of mbs {mbs} x dp {dp}")
    heads, groups = val(f, "--num-attention-heads"), val(f, "--num-query-groups", None)
    rule(heads % tp == 0, "tp does not divide the attention heads")
    if groups is not None:
        rule("--group-query-attention" in f, "--num-query-groups without --group-query-attention")
        rule(groups % tp == 0, "tp does not divide the query groups")
    if "--tp-comm-overlap" in f:
        rule(sp, "--tp-comm-overlap without --sequence-parallel")
    if "--overlap-param-gather" in f:
        rule("--use-distributed-optimizer" in f, "--overlap-param-gather without --use-distributed-optimizer")
        rule("--overlap-grad-reduce" in f, "--overlap-param-gather without --overlap-grad-reduce")
    experts = val(f, "--num-experts", None)
    if experts is not None:
        rule(experts % ep == 0, "ep does not divide the experts")
        if ep > 1 and tp > 1:
            rule(sp, "expert and tensor parallelism without sequence parallelism")
    fsdp = "--use-torch-fsdp2" in f
    if fsdp:
        rule(pp == 1, "--use-torch-fsdp2 with pipeline parallelism")
        rule(ep == 1, "--use-torch-fsdp2 with expert parallelism")
        rule("--use-distributed-optimizer" not in f, "--use-torch-fsdp2 with the distributed optimizer")
        rule("--no-gradient-accumulation-fusion" in f, "--use-torch-fsdp2 with gradient accumulation fusion")
        rule(val(f, "--ckpt-format", "torch_dist", str) in ("torch_dist", "torch_dcp"), "--use-torch-fsdp2 ckpt format")
        rule("--untie-embeddings-and-output-weights" in f, "--use-torch-fsdp2 with tied embeddings")
        rule("--fp16" not in f, "--use-torch-fsdp2 with fp16")
        rule("export CUDA_DEVICE_MAX_CONNECTIONS=1" not in text, "FSDP with CUDA_DEVICE_MAX_CONNECTIONS=1")
    elif (tp > 1 or cp > 1) and "--overlap-moe-expert-parallel-comm" not in f:
        rule("export CUDA_DEVICE_MAX_CONNECTIONS=1" in text, "tp/cp > 1 needs CUDA_DEVICE_MAX_CONNECTIONS=1 (Hopper)")
    layout = val(f, "--pipeline-model-parallel-layout", None, str)
    lps = val(f, "--num-layers-per-virtual-pipeline-stage", None)
    rule(not (layout and lps), "both a layout and layers per virtual stage")
    if layout:
        flat = layout.replace(",", "")
        flat = re.sub(r"\(([^)]+)\)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), flat)
        flat = re.sub(r"(.)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), flat)
        stages = flat.split("|")
        rule(len(stages) % pp == 0, "layout stages not a multiple of pp")
        rule(set("".join(stages)) <= set("EtLm"), "unknown layout character")
        joined = "".join(stages)
        rule(joined.startswith("E") and joined.endswith("L"), "layout must start with E and end with L")
        rule(joined.count("E") == 1 and joined.count("L") == 1, "one embedding and one loss")
        rule(joined.count("t") == layers, f"layout holds {joined.count('t')} layers of {layers}")
        vpp = len(stages) // pp
    elif lps:
        rule(layers % pp == 0, "layers not divisible by pp (virtual stages)")
        rule((layers // pp) % lps == 0, "layers per stage not divisible by layers per virtual stage")
        vpp = (layers // pp) // lps
    else:
        rule(layers % pp == 0, f"{layers} layers not divisible by pp {pp}, and no layout flag")
        vpp = 1
    if vpp > 1:
        rule(pp > 1, "interleaving without pipeline parallelism")
        rule((gbs // (mbs * dp)) % pp == 0, "interleaved schedule needs micro-batches divisible by pp")
    if val(f, "--recompute-granularity", None, str) == "selective":
        rule("--recompute-method" not in f, "selective recompute with a recompute method")
    recipe = val(f, "--fp8-recipe", None, str)
    if recipe:
        rule("--fp8-format" in f, "--fp8-recipe without --fp8-format")
        rule(recipe in ("tensorwise", "delayed", "mxfp8", "blockwise"), "unknown fp8 recipe " + recipe)
    rule(not ("--fp8-format" in f and "--fp4-format" in f), "fp8 and fp4 together")


def check_deepspeed(text, gpus, layers):
    # deepspeedai/DeepSpeed deepspeed/runtime/config.py (batch), runtime/pipe/engine.py (ZeRO with PP);
    # Megatron-DeepSpeed megatron/arguments.py.
    a = bash_arrays(text)
    f = {}
    for name in ("MODEL_ARGS", "PLAN_ARGS", "DATA_ARGS"):
        f.update(a.get(name, {}))
    m = re.search(r"<<'EOF'\n(.*?)\nEOF\n", text, re.S)
    rule(m is not None, "no DeepSpeed config heredoc")
    if not m:
        return
    ds = json.loads(m.group(1))
    world = world_of_script(text)
    rule(world == gpus, f"launcher starts {world} processes, the plan is for {gpus} GPUs")
    tp = val(f, "--tensor-model-parallel-size", 1)
    pp = val(f, "--pipeline-model-parallel-size", 1)
    rule(val(f, "--num-layers") == layers, "layer count")
    dp = world // (tp * pp)
    rule(ds["train_batch_size"] == ds["train_micro_batch_size_per_gpu"] * ds["gradient_accumulation_steps"] * dp,
         "train_batch_size != micro x accumulation x dp")
    rule(ds["train_batch_size"] == val(f, "--global-batch-size"), "DeepSpeed and Megatron global batch differ")
    rule(ds["train_micro_batch_size_per_gpu"] == val(f, "--micro-batch-size"), "micro-batch differs")
    stage = ds["zero_optimization"]["stage"]
    rule(stage == val(f, "--zero-stage", 0), "--zero-stage differs from the config")
    pipeline_engine = "--no-pipeline-parallel" not in f
    rule("--num-layers-per-virtual-pipeline-stage" not in f, "DeepSpeed's pipeline engine has no virtual stages")
    if stage >= 2:
        rule(not pipeline_engine, "ZeRO-2/3 under DeepSpeed's pipeline engine")
    rule(ds["bf16"]["enabled"] == ("--bf16" in f) and ds["fp16"]["enabled"] == ("--fp16" in f), "precision differs")
    rule(layers % pp == 0 or pp > 1, "layers")


def check_torchtitan_values(v, gpus, layers, current):
    """Rules of torchtitan's parallel dims and parallelize functions (v0.2.2 and main) on a dict of settings."""
    rep, shard, tp, pp, cp = v["replicate"], v["shard"], v["tp"], v["pp"], v["cp"]
    ep, etp = v.get("ep", 1), v.get("etp", 1)
    rule(rep * shard * cp * tp * pp == gpus, f"degrees multiply to {rep * shard * cp * tp * pp}, not {gpus}")
    fsdp = shard > 1 or cp > 1
    if rep > 1 and not fsdp:
        rule(rep == gpus, "DDP has not supported > 1D parallelism")
    rule(v["seq"] % (tp * 2 * cp) == 0 or (tp == 1 and cp == 1), "seq_len not divisible by tp x 2 x cp")
    if ep > 1:
        rule(etp in (1, tp), "etp must be 1 or tp")
        rule((shard * cp * tp) % ep == 0, "ep must divide dp_shard x cp x tp")
    if v["async_tp"]:
        rule(v["compile"] and "model" in v["components"], "async TP without torch.compile of the model")
        rule(not (v["mx"] and tp > 1), "mxfp8 with TP under torch.compile")
    if v["ac"] == "selective" and not current:
        rule(v.get("sac_option") == "op", "selective AC without selective_ac_option = op")
    if pp > 1:
        parts = v["parts"]
        rule(parts is not None, "no per-stage modules")
        if parts:
            rule(len(parts) % pp == 0, "stages not a multiple of pp")
            per_rank = len(parts) // pp
            single = v["schedule"] in ("1F1B", "GPipe")
            rule(per_rank == 1 if single else per_rank >= 2, "schedule and stages per rank disagree")
            names = [n for p in parts for n in p]
            rule(names[0] == "tok_embeddings", "first stage lacks the embedding")
            rule(names[-1] in ("output", "lm_head") and names[-2] == "norm", "last stage lacks norm and output")
            got = [n for n in names if n.startswith("layers.")]
            rule(got == [f"layers.{i}" for i in range(layers)], "stages do not hold every layer once, in order")
    rule(v["recipe"] in (None, "tensorwise", "rowwise", "rowwise_with_gw_hp"), "float8 recipe")


def check_torchtitan_toml(text, gpus, layers):
    import tomllib
    t = tomllib.loads(text)
    par, tr = t["parallelism"], t["training"]
    ac = t.get("activation_checkpoint", {})
    comp = t.get("compile", {})
    conv = t.get("model", {}).get("converters", [])
    v = dict(replicate=par.get("data_parallel_replicate_degree", 1), shard=par.get("data_parallel_shard_degree", -1),
             tp=par.get("tensor_parallel_degree", 1), pp=par.get("pipeline_parallel_degree", 1),
             cp=par.get("context_parallel_degree", 1), ep=par.get("expert_parallel_degree", 1),
             etp=par.get("expert_tensor_parallel_degree", 1), seq=tr["seq_len"],
             async_tp=par.get("enable_async_tensor_parallel", False), compile=comp.get("enable", False),
             components=comp.get("components", ["model", "loss"]), mx="quantize.linear.mx" in conv,
             ac=ac.get("mode", "selective"), sac_option=ac.get("selective_ac_option", "2"),
             parts=par.get("module_fqns_per_model_part"), schedule=par.get("pipeline_parallel_schedule", "1F1B"),
             recipe=t.get("quantize", {}).get("linear", {}).get("float8", {}).get("recipe_name"))
    check_torchtitan_values(v, gpus, layers, current=False)
    dp = v["replicate"] * v["shard"]
    local, glob = tr["local_batch_size"], tr["global_batch_size"]
    rule(glob % (local * dp) == 0, "global batch not a multiple of local x dp")
    if v["pp"] > 1:
        rule(local % par.get("pipeline_parallel_microbatch_size", 1) == 0, "local batch not whole pipeline micro-batches")


def check_torchtitan_python(text, gpus, layers):
    """Runs the config function against stand-ins for torchtitan's classes and checks the settings it makes."""
    compile(text, "emitted.py", "exec")
    made = {}

    class Obj(types.SimpleNamespace):
        pass

    def config_fn():
        return Obj(parallelism=Obj(), training=Obj(), compile=Obj(enable=False, components=["model", "loss"],
                                                                   enable_async_tensor_parallel=False),
                   activation_checkpoint="default-selective", model_spec=None)

    class Conv:
        def __init__(self, kind):
            self.kind = kind

        def Config(self, **kw):
            return (self.kind, kw)

    def compile_config(**kw):
        o = Obj(enable=False, components=["model", "loss"], enable_async_tensor_parallel=False)
        o.__dict__.update(kw)
        return o

    def model_registry(flavor, converters=None):
        made["converters"] = [c[0] for c in converters or []]
        return ("spec", flavor)

    mods = {
        "torchtitan": types.ModuleType("torchtitan"),
        "torchtitan.config": types.SimpleNamespace(CompileConfig=compile_config),
        "torchtitan.distributed": types.ModuleType("torchtitan.distributed"),
        "torchtitan.distributed.activation_checkpoint": types.SimpleNamespace(
            FullAC=types.SimpleNamespace(Config=lambda: "full"), SelectiveAC=types.SimpleNamespace(Config=lambda: "selective")),
        "torchtitan.components": types.ModuleType("torchtitan.components"),
        "torchtitan.components.quantization": types.SimpleNamespace(
            Float8LinearConverter=Conv("float8"), MXFP8LinearConverter=Conv("mx"), NVFP4LinearConverter=Conv("nvfp4")),
        "torchtitan.models": types.ModuleType("torchtitan.models"),
    }
    for m in re.findall(r"^from torchtitan\.models\.(\w+) import model_registry$", text, re.M):
        mods["torchtitan.models." + m] = types.SimpleNamespace(model_registry=model_registry)
    for m, fn in re.findall(r"^from torchtitan\.models\.(\w+)\.config_registry import (\w+)$", text, re.M):
        mods[f"torchtitan.models.{m}.config_registry"] = types.SimpleNamespace(**{fn: config_fn})
    saved = {k: sys.modules.get(k) for k in mods}
    sys.modules.update(mods)
    try:
        ns = {}
        exec(text, ns)
        cfg = ns["shardplan_plan"]()
    finally:
        for k, m in saved.items():
            if m is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = m
    p, tr, c = cfg.parallelism.__dict__, cfg.training.__dict__, cfg.compile
    v = dict(replicate=p.get("data_parallel_replicate_degree", 1), shard=p.get("data_parallel_shard_degree", -1),
             tp=p.get("tensor_parallel_degree", 1), pp=p.get("pipeline_parallel_degree", 1),
             cp=p.get("context_parallel_degree", 1), ep=p.get("expert_parallel_degree", 1), etp=1,
             seq=tr["max_context_length"], async_tp=getattr(c, "enable_async_tensor_parallel", False),
             compile=c.enable, components=c.components, mx="mx" in made.get("converters", []),
             ac={None: "none"}.get(cfg.activation_checkpoint, cfg.activation_checkpoint),
             parts=p.get("module_fqns_per_model_part"), schedule=p.get("pipeline_parallel_schedule", "1F1B"),
             recipe=None)
    check_torchtitan_values(v, gpus, layers, current=True)
    dp = v["replicate"] * v["shard"]
    per_mb = tr["num_tokens_per_microbatch_per_dp_rank"]
    rule(per_mb % tr["max_context_length"] == 0, "micro-batch tokens not whole sequences")
    steps = p.get("num_pp_microbatches", 1) if v["pp"] > 1 else 1
    rule(tr["num_tokens_per_train_step"] % (per_mb * steps * dp) == 0, "step tokens not whole micro-batches")


def check_nemo(text, gpus, layers):
    import yaml
    y = yaml.safe_load(text)
    m, ddp = y["model"], y.get("ddp", {})
    nodes, per = map(int, re.search(r"^# on (\d+) nodes x (\d+) GPUs", text, re.M).groups())
    world = nodes * per
    rule(world == gpus, f"{world} GPUs named, the plan is for {gpus}")
    tp, pp, cp = m["tensor_model_parallel_size"], m["pipeline_model_parallel_size"], m["context_parallel_size"]
    ep = m.get("expert_model_parallel_size", 1)
    sp = m.get("sequence_parallel", False)
    rule(m["num_layers"] == layers, "layer count")
    dp = world // (tp * pp * cp)
    rule(y["train"]["global_batch_size"] % (y["train"]["micro_batch_size"] * dp) == 0, "global batch")
    if y.get("comm_overlap", {}).get("tp_comm_overlap"):
        rule(sp, "tp_comm_overlap without sequence_parallel")
    if ddp.get("overlap_param_gather"):
        rule(ddp.get("use_distributed_optimizer"), "overlap_param_gather without the distributed optimizer")
    if ep > 1 and tp > 1:
        rule(sp, "expert and tensor parallelism without sequence parallelism")
    if y.get("dist", {}).get("use_torch_fsdp2"):
        rule(pp == 1 and ep == 1, "FSDP2 with pp or ep")
        rule(not m.get("share_embeddings_and_output_weights"), "FSDP2 with tied embeddings")
        rule(not ddp.get("use_distributed_optimizer"), "FSDP2 with the distributed optimizer")
    vpp = m.get("virtual_pipeline_model_parallel_size") or 1
    layout = m.get("pipeline_model_parallel_layout")
    if layout:
        rule(len(layout) == pp * vpp, "layout stages != pp x vpp")
        flat = [x for s in layout for x in s]
        rule(flat[0] == "embedding" and flat[-1] == "loss", "layout ends")
        rule(flat.count("decoder") == layers, "layout layer count")
    else:
        rule(layers % (pp * vpp) == 0, f"{layers} layers not divisible by pp x vpp {pp * vpp}")
    mp = y.get("mixed_precision", {})
    rule(not (mp.get("fp8") and mp.get("fp4")), "fp8 and fp4 together")
    if mp.get("fp8"):
        rule(mp.get("fp8_recipe") in ("tensorwise", "delayed", "mxfp8", "blockwise"), "fp8 recipe")
    if m.get("recompute_granularity") == "selective":
        rule(m.get("recompute_method") is None, "selective recompute with a method")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("format")
    ap.add_argument("file")
    ap.add_argument("--gpus", type=int, required=True)
    ap.add_argument("--layers", type=int, required=True)
    a = ap.parse_args()
    text = open(a.file).read()
    rule("targets " in text.split("\n", 4)[1] + text.split("\n", 4)[2] or "# targets " in text,
         "the header names no target release")
    if a.format in ("megatron", "deepspeed"):
        check_bash_syntax(a.file)
    checks = {"megatron": check_megatron, "deepspeed": check_deepspeed, "torchtitan": check_torchtitan_python,
              "torchtitan-toml": check_torchtitan_toml, "nemo": check_nemo}
    try:
        checks[a.format](text, a.gpus, a.layers)
    except Exception as e:  # a parse error or a missing key is a failure of the file
        problems.append(f"{type(e).__name__}: {e}")
    for p in problems:
        print(f"{a.file}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
