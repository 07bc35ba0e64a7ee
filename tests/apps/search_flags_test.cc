#include "apps/search_flags.h"

#include <doctest/doctest.h>

#include <deque>
#include <sstream>

#include "modeler/problems.h"
#include "modeler/strategies/strategy.h"

using namespace shardplan;
using namespace shardplan::cli;

namespace {

/// Parses search flags as the command line would give them. SearchFlags keeps CLI::Option pointers into the App
/// (sp_option, ...), so each App outlives the test that reads them: kept here until the binary exits (a local App
/// was a use-after-free that ASan reports).
SearchFlags parse(std::vector<std::string> args) {
  static std::deque<CLI::App> apps;
  CLI::App& app = apps.emplace_back();
  SearchFlags f;
  add_search_flags(&app, &f, false);
  args.insert(args.begin(), {"--model", "m"});
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes arguments in reverse order
  app.parse(reversed);
  return f;
}

/// tp8 cp1 pp4 vpp2 dp32, ZeRO-1, SP, mbs 1, selective recompute, bf16.
Plan sample_plan() {
  Plan p;
  p.tp = 8;
  p.pp = 4;
  p.vpp = 2;
  p.dp = 32;
  p.etp = 8;
  p.zero = 1;
  p.sequence_parallel = true;
  p.micro_batch = 1;
  p.global_batch = 256;
  p.seq_len = 4096;
  p.recompute = Recompute::selective;
  return p;
}

}  // namespace

TEST_SUITE("search_flags") {

TEST_CASE("resolve_gpu_counts: a value, a list, a power-of-two range, a stepped range") {
  CHECK(resolve_gpu_counts("1024") == std::vector<int>{1024});
  CHECK(resolve_gpu_counts("128,256") == std::vector<int>{128, 256});
  CHECK(resolve_gpu_counts("256,128,128") == std::vector<int>{128, 256});
  CHECK(resolve_gpu_counts("128:2048") == std::vector<int>{128, 256, 512, 1024, 2048});
  CHECK(resolve_gpu_counts("100:300") == std::vector<int>{128, 256});
  CHECK(resolve_gpu_counts("8:32:8") == std::vector<int>{8, 16, 24, 32});
}

TEST_CASE("resolve_gpu_counts: bad values name the flag") {
  CHECK_THROWS_WITH_AS(resolve_gpu_counts(""), "give the GPU count: --gpus N (or a list a,b or a range a:b)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(resolve_gpu_counts("0"), "--gpus: '0' is not a positive integer", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_gpu_counts("0,8"), "--gpus: '0' is not a positive integer", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_gpu_counts("3:3"),
                       "--gpus: '3:3' names no GPU count (a:b takes the powers of two in it)", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_gpu_counts("many"), "--gpus: 'many' is not a positive integer", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_gpu_counts("-8"), "--gpus: '-8' is not a positive integer", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_gpu_counts("8,,16"), "--gpus: '' is not a positive integer", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_gpu_counts("64:8"), "--gpus: range '64:8' is empty (64 > 8)", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_gpu_counts("1:2:3:4"), "--gpus: '1:2:3:4' is not a range a:b or a:b:step",
                       ConfigError);
  CHECK_THROWS_WITH_AS(resolve_gpu_counts("8:16:0"), "--gpus: step of '8:16:0' must be positive", ConfigError);
}

TEST_CASE("resolve_request: axes, defaults and the sp flag only when given") {
  const SpaceRequest d = resolve_request(parse({}));
  CHECK(d.sp.empty());
  CHECK(d.tp_overlap.empty());
  CHECK(d.zero.values == resolve_framework("megatron-lm").zero_stages);
  CHECK(d.recompute.empty());
  const SpaceRequest r = resolve_request(
      parse({"--tp", "2,4", "--pp", "1:8", "--zero", "1", "--no-sp", "--tp-overlap", "--recompute", "none,full",
             "--precision", "fp8", "--gbs", "512", "--seq", "8192", "--max-tp", "4"}));
  CHECK(r.tp.values == std::vector<int>{2, 4});
  CHECK(r.pp.range);
  CHECK(r.pp.lo == 1);
  CHECK(r.pp.hi == 8);
  CHECK(r.zero.values == std::vector<int>{1});
  CHECK(r.sp == std::vector<bool>{false});
  CHECK(r.tp_overlap == std::vector<bool>{true});
  CHECK(r.recompute == std::vector<Recompute>{Recompute::none, Recompute::full});
  CHECK(r.precision == std::vector<Dtype>{Dtype::fp8});
  CHECK(r.global_batch == 512);
  CHECK(r.seq_len == 8192);
  CHECK(r.max_tp == 4);
}

TEST_CASE("resolve_request: bad --zero and --allow values") {
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--zero", "1,4"})), "--zero: stage 4 does not exist (0, 1, 2 or 3)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--allow", "warp"})), "--allow: unknown strategy 'warp' (tsp or sdp)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--allow", "tps"})),
                       "--allow: unknown strategy 'tps' (tsp or sdp), did you mean 'tsp'?", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--allow", "tp"})),
                       "--allow: 'tp' is always searched; --allow takes tsp or sdp", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--tsp", "4"})), "--tsp 4 needs --allow tsp", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--sdp-keep", "0.5"})), "--sdp-keep 0.5 needs --allow sdp", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--allow", "sdp", "--sdp-keep", "1.5"})),
                       "--sdp-keep: '1.5' is not a fraction in (0, 1)", ConfigError);
}

TEST_CASE("resolve_request: MoE all-to-all overlap follows the flag and the framework") {
  CHECK(resolve_request(parse({})).ep_overlap.empty());  // both, where ep > 1
  CHECK(resolve_request(parse({"--no-ep-overlap"})).ep_overlap == std::vector<bool>{false});
  CHECK(resolve_request(parse({"--ep-overlap"})).ep_overlap == std::vector<bool>{true});
  CHECK(resolve_request(parse({"--framework", "torchtitan"})).ep_overlap == std::vector<bool>{false});
}

TEST_CASE("resolve_request: MoE dispatchers and node limits, where the framework offers them") {
  // Unlisted: the framework's default dispatcher (no axis), and no node limit.
  CHECK(resolve_request(parse({})).moe_dispatchers.empty());
  CHECK(resolve_request(parse({"--framework", "torchtitan", "--moe-dispatcher", "alltoall"})).moe_dispatchers ==
        std::vector<MoeDispatcher>{MoeDispatcher::alltoall});
  CHECK(resolve_request(parse({})).moe_max_nodes.empty());
  CHECK(resolve_request(parse({"--moe-dispatcher", "deepep,alltoall"})).moe_dispatchers ==
        std::vector<MoeDispatcher>{MoeDispatcher::deepep, MoeDispatcher::alltoall});
  CHECK(resolve_request(parse({"--moe-max-nodes", "0,4"})).moe_max_nodes == std::vector<int>{0, 4});
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--moe-dispatcher", "deepx"})),
                       "--moe-dispatcher: unknown dispatcher 'deepx' (alltoall, allgather, deepep or hybridep)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--framework", "torchtitan", "--moe-dispatcher", "deepep"})),
                       "--moe-dispatcher: torchtitan does not offer the deepep dispatcher (it offers alltoall)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--moe-dispatcher", "alltoall,alltoall"})),
                       "--moe-dispatcher: alltoall is listed twice", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--framework", "torchtitan", "--moe-max-nodes", "4"})),
                       "--moe-max-nodes: torchtitan does not offer node-limited routing", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--moe-max-nodes", "1:4"})),
                       "--moe-max-nodes takes a value or a list (0,4), not a range", ConfigError);
}

TEST_CASE("plan_label names a chosen dispatcher and node limit") {
  Plan p = sample_plan();
  p.ep = 8;
  p.moe_dispatcher = MoeDispatcher::deepep;
  p.moe_max_nodes = 4;
  const std::string label = plan_label(p);
  CHECK(label.find(" deepep") != std::string::npos);
  CHECK(label.find(" M4") != std::string::npos);
}

TEST_CASE("resolve_request: --recompute-layers takes a list or a range") {
  CHECK(resolve_request(parse({"--recompute-layers", "2,8,4"})).recompute_layers == std::vector<int>{2, 4, 8});
  CHECK(resolve_request(parse({"--recompute-layers", "1:3"})).recompute_layers == std::vector<int>{1, 2, 3});
  CHECK_THROWS_WITH_AS(resolve_request(parse({"--recompute-layers", "0"})),
                       "--recompute-layers: '0' is not a positive integer", ConfigError);
}

TEST_CASE("resolve_request: --allow tsp and sdp open their axes") {
  SpaceRequest r = resolve_request(parse({"--allow", "tsp,sdp", "--tsp", "2,4", "--sdp-keep", "0.25,0.5"}));
  CHECK(r.allow_tsp);
  CHECK(r.tsp.values == std::vector<int>{2, 4});
  CHECK(r.allow_sdp);
  CHECK(r.sdp_keep == std::vector<double>{0.25, 0.5});
  r = resolve_request(parse({}));
  CHECK_FALSE(r.allow_tsp);
  CHECK_FALSE(r.allow_sdp);
}

TEST_CASE("search_options: top, threads and headroom") {
  const SearchOptions o = search_options(parse({"--top", "3", "--threads", "2", "--headroom", "1.5"}));
  CHECK(o.top_k == 3);
  CHECK(o.threads == 2);
  CHECK(o.headroom.v == doctest::Approx(1.5 * (1 << 30)));
}

TEST_CASE("plan_label") {
  CHECK(plan_label(sample_plan()) == "tp8 cp1 pp4 vpp2 dp32 z1 sp mbs1 selective bf16");
  Plan p;
  p.tp = 2;
  p.cp = 2;
  p.pp = 3;
  p.dp = 4;
  p.ep = 2;
  p.uneven_pipeline = true;
  p.tp_comm_overlap = true;
  p.micro_batch = 2;
  p.recompute = Recompute::full;
  p.precision = Dtype::fp8;
  CHECK(plan_label(p) == "tp2 cp2 pp3 dp4 ep2 uneven z0 ovl mbs2 full fp8");
  Plan q;
  q.tp = 1;
  q.tsp = 4;
  q.dp = 2;
  q.sdp_keep = 0.5;
  q.sdp_mask = SdpMask::backward;
  CHECK(plan_label(q) == "tsp4 pp1 dp2 z0 mbs1 none bf16 sdp0.5/backward");
  q.recompute = Recompute::full;
  q.recompute_layers = 3;
  CHECK(plan_label(q).find(" full:3 bf16") != std::string::npos);
}

TEST_CASE("predict_command: the system flags given, then the plan's flags") {
  SearchFlags f = parse({"--gpu", "h100-sxm5-80gb", "--gpus-per-node", "4", "--nic-gbps", "400", "--framework",
                         "torchtitan"});
  f.model = "llama-3-8b";
  const Plan p = sample_plan();
  const std::string cmd = predict_command(f, p, 1024);
  CHECK(cmd == "shardplan predict --model llama-3-8b --gpu h100-sxm5-80gb --gpus 1024 --gpus-per-node 4 "
               "--nic-gbps 400 " + plan_arguments(p, "torchtitan"));
  for (const char* flag : {" --tp 8", " --pp 4", " --vpp 2", " --dp 32", " --zero 1", " --sp", " --mbs 1",
                           " --gbs 256", " --seq 4096", " --recompute selective", " --precision bf16",
                           " --framework torchtitan"})
    CHECK_MESSAGE(cmd.find(flag) != std::string::npos, flag);

  // The command parses back to the same plan.
  std::istringstream in(cmd);
  std::vector<std::string> args;
  for (std::string w; in >> w;) args.push_back(w);
  args.erase(args.begin(), args.begin() + 2);  // "shardplan predict"
  CLI::App app;
  std::string model;
  SystemFlags sf;
  PlanFlags pf;
  app.add_option("--model", model);
  add_system_flags(&app, &sf, true);
  add_plan_flags(&app, &pf);
  app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  CHECK(model == "llama-3-8b");
  CHECK(sf.gpus == 1024);
  System sys;
  sys.gpus = 1024;
  const Plan q = resolve_plan(pf, sys);
  CHECK(plan_label(q) == plan_label(p));
  CHECK(q.global_batch == p.global_batch);
  CHECK(q.seq_len == p.seq_len);
  CHECK(pf.framework == "torchtitan");

  SearchFlags s;
  s.model = "m.yaml";
  s.system.system = "dgx-h100";
  CHECK(predict_command(s, p, 64) == "shardplan predict --model m.yaml --system dgx-h100 --gpus 64 " +
                                         plan_arguments(p, "megatron-lm"));
}

}
