#include "modeler/plan_space.h"

#include <doctest/doctest.h>

#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {
/// A request for 16 sequences of 128 tokens; axes left open unless given.
SpaceRequest tiny_request(std::vector<int> tp = {}, std::vector<int> cp = {}, std::vector<int> pp = {}) {
  SpaceRequest r;
  r.global_batch = 16;
  r.seq_len = 128;
  r.tp.values = std::move(tp);
  r.cp.values = std::move(cp);
  r.pp.values = std::move(pp);
  return r;
}

/// The tiny model with 4 routed experts of width 32, top-2, in every layer: ep can be 1, 2 or 4.
ModelDesc tiny_four_experts() {
  ModelDesc m = test::tiny_model();
  MoeDesc moe;
  moe.experts = 4;
  moe.top_k = 2;
  moe.expert_ffn_hidden = 32;
  m.moe = moe;
  return m;
}
}  // namespace

TEST_CASE("parse_axis: values, lists, ranges and stepped ranges") {
  CHECK(parse_axis("--tp", "8").values == std::vector<int>{8});
  CHECK(parse_axis("--tp", "8,1,2,2").values == std::vector<int>{1, 2, 8});
  const AxisSpec r = parse_axis("--pp", "2:16");
  CHECK(r.range);
  CHECK(r.select({1, 2, 3, 4, 16, 32}) == std::vector<int>{2, 3, 4, 16});
  CHECK(parse_axis("--mbs", "1:7:3").values == std::vector<int>{1, 4, 7});
  CHECK(AxisSpec{}.select({1, 2}) == std::vector<int>{1, 2});
}

TEST_CASE("parse_axis: errors name the flag") {
  CHECK_THROWS_WITH_AS(parse_axis("--tp", "x"), "--tp: 'x' is not a positive integer", ConfigError);
  // Degrees start at 1 (a 0 would divide by zero downstream); ZeRO stages at 0.
  CHECK_THROWS_WITH_AS(parse_axis("--tp", "0"), "--tp: '0' is not a positive integer", ConfigError);
  CHECK_THROWS_WITH_AS(parse_axis("--pp", "0:8"), "--pp: '0' is not a positive integer", ConfigError);
  CHECK(parse_axis("--zero", "0,1", 0).values == std::vector<int>{0, 1});
  CHECK_THROWS_WITH_AS(parse_axis("--zero", "-1", 0), "--zero: '-1' is not a non-negative integer", ConfigError);
  CHECK_THROWS_WITH_AS(parse_axis("--pp", "8:2"), "--pp: range '8:2' is empty (8 > 2)", ConfigError);
  CHECK_THROWS_WITH_AS(parse_axis("--pp", "1:8:0"), "--pp: step of '1:8:0' must be positive", ConfigError);
  CHECK_THROWS_WITH_AS(parse_axis("--pp", "1:2:3:4"), "--pp: '1:2:3:4' is not a range a:b or a:b:step", ConfigError);
}

TEST_CASE("powers_of_two and divisors") {
  CHECK(powers_of_two(2, 20) == std::vector<int>{2, 4, 8, 16});
  CHECK(divisors(12, 6) == std::vector<int>{1, 2, 3, 4, 6});
  CHECK(divisors(36, 100) == std::vector<int>{1, 2, 3, 4, 6, 9, 12, 18, 36});
  CHECK(divisors(1, 1) == std::vector<int>{1});
  // The largest int (a prime): no overflow of the loop counter (a global batch of INT_MAX crashed the search).
  CHECK(divisors(2147483647, 2147483647) == std::vector<int>{1, 2147483647});
}

TEST_CASE("make_plan_space: layouts multiply to the GPU count; options multiply per layout") {
  ModelDesc m = test::tiny_model();  // 2 layers, 4 heads
  const System s = test::synthetic_system(8);
  const SpaceRequest r = tiny_request({}, {1});
  const PlanSpace space = make_plan_space(m, s, r);
  // tp in {1,2,4,8} (domain 8), pp in divisors of 8 up to 2 layers {1,2}, vpp 1 (one layer per rank at pp 2):
  // (tp, pp) = (1,1) (1,2) (2,1) (2,2) (4,1) (4,2) (8,1).
  CHECK(space.layouts.size() == 7);
  for (const Layout& l : space.layouts) CHECK(l.tp * l.cp * l.pp * l.dp == 8);
  // tp 1, pp 1, dp 8: 16/8 = 2 sequences per rank -> mbs {1, 2}; 4 zero stages; 3 recomputes; bf16 only.
  const Layout& first = space.layouts.front();
  CHECK(first.tp == 1);
  CHECK(first.mbs == std::vector<int>{1, 2});
  CHECK(space.layout_size(first) == 2 * 4 * 3);
  // tp > 1 adds sp on/off x overlap off/on.
  const Layout& tp2 = space.layouts[2];
  CHECK(tp2.tp == 2);
  CHECK(space.layout_size(tp2) == tp2.mbs.size() * 4 * 2 * 2 * 3);

  // Every index decodes to a distinct plan of the layout.
  std::set<std::tuple<int, bool, bool, int, int>> seen;
  for (uint64_t k = 0; k < space.layout_size(tp2); ++k) {
    const Plan p = space.plan_at(tp2, k);
    CHECK(p.tp == 2);
    CHECK(p.global_batch == 16);
    seen.insert({p.zero, p.sequence_parallel, p.tp_comm_overlap, p.micro_batch, static_cast<int>(p.recompute)});
  }
  CHECK(seen.size() == space.layout_size(tp2));
}

TEST_CASE("make_plan_space: fixed values, caps and impossible requests") {
  const ModelDesc m = test::tiny_model();
  const System s = test::synthetic_system(8);
  SpaceRequest r;
  r.global_batch = 8;
  r.seq_len = 128;
  r.tp = parse_axis("--tp", "2");
  r.pp.values = {1};
  r.max_cp = 1;
  const PlanSpace space = make_plan_space(m, s, r);
  REQUIRE(space.layouts.size() == 1);
  CHECK(space.layouts[0].dp == 4);

  r.tp = parse_axis("--tp", "3");
  CHECK_THROWS_WITH_AS(make_plan_space(m, s, r),
                       "no plan matches the constraints: tp x cp x pp must divide the GPU count (8) with the given "
                       "--tp/--cp/--pp/--zero/--mbs values and caps",
                       ConfigError);
  r.global_batch = 0;
  CHECK_THROWS_WITH_AS(make_plan_space(m, s, r), "search needs the global batch (--gbs)", ConfigError);
}

TEST_CASE("make_plan_space: block recompute settings join full recompute when asked for") {
  SpaceRequest r = tiny_request({1}, {1}, {1});
  r.recompute = {Recompute::selective, Recompute::full};
  r.recompute_layers = {1};
  const PlanSpace space = make_plan_space(test::tiny_model(), test::synthetic_system(8), r);
  REQUIRE(space.recompute.size() == 3);  // selective, full of every layer, full of 1 layer per chunk
  const Layout& l = space.layouts.front();
  std::set<std::pair<int, int>> seen;
  for (uint64_t k = 0; k < space.layout_size(l); ++k) {
    const Plan p = space.plan_at(l, k);
    seen.insert({static_cast<int>(p.recompute), p.recompute_layers});
  }
  CHECK(seen == std::set<std::pair<int, int>>{{static_cast<int>(Recompute::selective), 0},
                                               {static_cast<int>(Recompute::full), 0},
                                               {static_cast<int>(Recompute::full), 1}});
}

TEST_CASE("make_plan_space: selective recompute tries the module sets asked for") {
  SpaceRequest r = tiny_request({1}, {1}, {1});
  r.recompute = {Recompute::none, Recompute::selective};
  r.recompute_modules = {kRecomputeCoreAttn | kRecomputeMlp, kRecomputeCoreAttn};  // replace the default set
  const PlanSpace space = make_plan_space(test::tiny_model(), test::synthetic_system(8), r);
  REQUIRE(space.recompute.size() == 3);
  const Layout& l = space.layouts.front();
  std::set<std::pair<int, unsigned>> seen;
  for (uint64_t k = 0; k < space.layout_size(l); ++k) {
    const Plan p = space.plan_at(l, k);
    seen.insert({static_cast<int>(p.recompute), p.recompute_modules});
  }
  CHECK(seen == std::set<std::pair<int, unsigned>>{{static_cast<int>(Recompute::none), kRecomputeCoreAttn},
                                                    {static_cast<int>(Recompute::selective), kRecomputeCoreAttn},
                                                    {static_cast<int>(Recompute::selective),
                                                     kRecomputeCoreAttn | kRecomputeMlp}});
}

TEST_CASE("make_plan_space: TSP layouts and SDP settings only when asked for") {
  const ModelDesc m = test::tiny_model();
  const System s = test::synthetic_system(8);
  SpaceRequest r = tiny_request({1}, {1}, {1});
  const PlanSpace plain = make_plan_space(m, s, r);
  for (const Layout& l : plain.layouts) CHECK(l.tsp == 1);
  CHECK(plain.sdp.size() == 1);
  r.allow_tsp = true;
  r.allow_sdp = true;
  r.sdp_keep = {0.5};
  const PlanSpace wide = make_plan_space(m, s, r);
  // tp 1 cp 1 pp 1 dp 8, then tsp 2, 4, 8 (powers of two up to the 8-GPU domain) in place of tp and cp.
  std::set<int> tsps;
  for (const Layout& l : wide.layouts) {
    CHECK(l.tp * l.cp * l.tsp * l.pp * l.dp == 8);
    if (l.tsp > 1) CHECK(l.tp * l.cp == 1);
    tsps.insert(l.tsp);
  }
  CHECK(tsps == std::set<int>{1, 2, 4, 8});
  // Plain data parallelism, then keep 0.5 with forward and with backward masking: 3x the plans of each layout.
  CHECK(wide.sdp.size() == 3);
  const Layout& first = wide.layouts.front();
  CHECK(wide.layout_size(first) == 3 * plain.layout_size(plain.layouts.front()));
  std::set<std::pair<double, int>> sdp_seen;
  for (uint64_t k = 0; k < wide.layout_size(first); ++k) {
    const Plan p = wide.plan_at(first, k);
    sdp_seen.insert({p.sdp_keep, static_cast<int>(p.sdp_mask)});
  }
  CHECK(sdp_seen.size() == 3);
  CHECK(wide.plan_at(wide.layouts.back(), 0).tsp == wide.layouts.back().tsp);
  // --tsp restricts the degrees.
  r.tsp.values = {4};
  tsps.clear();
  for (const Layout& l : make_plan_space(m, s, r).layouts) tsps.insert(l.tsp);
  CHECK(tsps == std::set<int>{1, 4});
}

TEST_CASE("make_plan_space: MoE models get expert-parallel layouts that divide experts and dp x cp") {
  const ModelDesc m = tiny_four_experts();
  const System s = test::synthetic_system(8);
  const SpaceRequest r = tiny_request({1}, {1}, {1});
  const PlanSpace space = make_plan_space(m, s, r);
  std::set<int> eps;
  for (const Layout& l : space.layouts) {
    CHECK((l.dp * l.cp) % l.ep == 0);
    CHECK(m.moe->experts % l.ep == 0);
    eps.insert(l.ep);
  }
  CHECK(eps == std::set<int>{1, 2, 4});  // 8 would exceed the 4 experts
  CHECK(space.plan_at(space.layouts.back(), 0).ep == space.layouts.back().ep);
  // All-to-all overlap off and on for ep > 1 layouts only.
  for (const Layout& l : space.layouts) {
    std::set<bool> overlap;
    for (uint64_t k = 0; k < space.layout_size(l); ++k) overlap.insert(space.plan_at(l, k).ep_comm_overlap);
    CHECK(overlap == (l.ep > 1 ? std::set<bool>{false, true} : std::set<bool>{false}));
  }
}

TEST_CASE("make_plan_space: dispatchers and node limits are axes of the ep > 1 layouts only") {
  const ModelDesc m = tiny_four_experts();
  const System s = test::synthetic_system(8);
  SpaceRequest r = tiny_request({1}, {1}, {1});
  const PlanSpace plain = make_plan_space(m, s, r);
  r.moe_dispatchers = {MoeDispatcher::alltoall, MoeDispatcher::deepep};
  r.moe_max_nodes = {0, 4};
  const PlanSpace space = make_plan_space(m, s, r);
  REQUIRE(space.layouts.size() == plain.layouts.size());
  for (size_t i = 0; i < space.layouts.size(); ++i) {
    const Layout& l = space.layouts[i];
    CHECK(space.layout_size(l) == plain.layout_size(plain.layouts[i]) * (l.ep > 1 ? 4 : 1));
    std::set<std::pair<int, int>> seen;  // (dispatcher, max nodes); -1: unset
    for (uint64_t k = 0; k < space.layout_size(l); ++k) {
      const Plan p = space.plan_at(l, k);
      seen.insert({p.moe_dispatcher ? static_cast<int>(*p.moe_dispatcher) : -1, p.moe_max_nodes});
    }
    const int a2a = static_cast<int>(MoeDispatcher::alltoall), deepep = static_cast<int>(MoeDispatcher::deepep);
    if (l.ep > 1)
      CHECK(seen == std::set<std::pair<int, int>>{{a2a, 0}, {a2a, 4}, {deepep, 0}, {deepep, 4}});
    else
      CHECK(seen == std::set<std::pair<int, int>>{{-1, 0}});
  }
  r.moe_max_nodes = {-1};
  CHECK_THROWS_WITH_AS(make_plan_space(m, s, r), "--moe-max-nodes: '-1' is below 0 (0: no node limit)", ConfigError);
}

TEST_CASE(
    "make_plan_space: a pp that does not divide the layers is an uneven layout, interleaved over the busiest rank's "
    "layers") {
  ModelDesc m = test::tiny_model();
  m.layers = 3;
  const System s = test::synthetic_system(8);
  SpaceRequest r = tiny_request({1}, {1}, {2});
  const PlanSpace space = make_plan_space(m, s, r);
  REQUIRE(!space.layouts.empty());
  std::set<int> vpps;
  for (const Layout& l : space.layouts) {
    CHECK(l.uneven);
    CHECK(space.plan_at(l, 0).uneven_pipeline);
    vpps.insert(l.vpp);
  }
  // The busiest of the 2 ranks holds ceil(3 / 2) = 2 layers: 1 or 2 virtual stages.
  CHECK(vpps == std::set<int>{1, 2});
  // Llama-3.1 405B's 126 layers on pp 8: 16 on the busiest rank, so vpp 8 (Megatron-Bridge's recipe) is searched.
  ModelDesc big = test::tiny_model();
  big.layers = 126;
  r.pp.values = {8};
  const PlanSpace deep = make_plan_space(big, test::synthetic_system(64), r);
  std::set<int> deep_vpps;
  for (const Layout& l : deep.layouts) deep_vpps.insert(l.vpp);
  CHECK(deep_vpps == std::set<int>{1, 2, 4, 8, 16});
}

TEST_CASE("parse_axis and make_plan_space refuse spaces above their limits before allocating (issue 12)") {
  CHECK_THROWS_WITH_AS(parse_axis("--vpp", "1:16777216:1"),
                       "--vpp: '1:16777216:1' lists 16777216 values, more than 4096; use a larger step, or a:b for "
                       "the axis's usual candidates in that range",
                       ConfigError);
  CHECK(parse_axis("--vpp", "1:4096:1").values.size() == 4096);
  // 4,096 explicit vpps x 4,096 micro-batches x the option axes: about 1.6e9 plans, refused while it grows.
  SpaceRequest r;
  r.global_batch = 1 << 20;
  r.seq_len = 128;
  r.vpp = parse_axis("--vpp", "1:4096:1");
  r.mbs = parse_axis("--mbs", "1:4096:1");
  CHECK_THROWS_WITH_AS(make_plan_space(test::tiny_gqa_gated(), test::synthetic_system(8), r),
                       "the plan space has more than 1000000000 plans; narrow it with --tp, --cp, --pp, --vpp, --mbs, "
                       "--zero, --recompute or --precision (a list or a:b range each)",
                       ConfigError);
}
