#include "modeler/search.h"

#include <doctest/doctest.h>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {

struct Case {
  ModelDesc model = test::tiny_gqa_gated();  // 2 layers, 4 heads, 2 kv heads
  System system = test::synthetic_system(8);
  Framework fw = test::synthetic_framework();
  PlanSpace space;
  Case() {
    SpaceRequest r;
    r.global_batch = 16;
    r.seq_len = 128;
    space = make_plan_space(model, system, r);
  }
};

uint64_t rejected_total(const SearchResult& r) {
  uint64_t n = 0;
  for (const auto& [code, count] : r.rejected) n += count;
  return n;
}

}  // namespace

TEST_CASE("search: every plan is either feasible or counted under one reason") {
  const Case c;
  SearchOptions opt;
  opt.threads = 2;
  const SearchResult r = search(c.model, c.system, c.fw, c.space, opt);
  CHECK(r.space_size == c.space.size());
  CHECK(r.evaluated == r.space_size);
  CHECK(r.feasible + rejected_total(r) == r.evaluated);
  // tp 4 and 8 do not divide the 2 kv heads; tp 8 does not divide the 4 heads either (first problem wins).
  CHECK(r.rejected.at("tp_divides_kv_heads") > 0);
  CHECK(r.rejected.at("tp_divides_heads") > 0);
  REQUIRE(!r.top.empty());
  CHECK(r.top.size() <= 10);
  for (size_t i = 1; i < r.top.size(); ++i) CHECK(!estimate_less(r.top[i], r.top[i - 1]));
  for (const Estimate& e : r.top) CHECK(e.feasible());
  // The front: faster plans never have more headroom than slower ones on it.
  for (size_t i = 1; i < r.pareto.size(); ++i) {
    CHECK(r.pareto[i].time.step() >= r.pareto[i - 1].time.step());
    CHECK(r.pareto[i].memory.total() < r.pareto[i - 1].memory.total());
  }
  CHECK(r.pareto.front().time.step() == r.top.front().time.step());
}

TEST_CASE("search: results do not depend on the thread count") {
  const Case c;
  SearchOptions one, four;
  one.threads = 1;
  four.threads = 4;
  const SearchResult a = search(c.model, c.system, c.fw, c.space, one);
  const SearchResult b = search(c.model, c.system, c.fw, c.space, four);
  CHECK(a.rejected == b.rejected);
  CHECK(a.feasible == b.feasible);
  REQUIRE(a.top.size() == b.top.size());
  for (size_t i = 0; i < a.top.size(); ++i) {
    CHECK(!plan_less(a.top[i].plan, b.top[i].plan));
    CHECK(!plan_less(b.top[i].plan, a.top[i].plan));
  }
}

TEST_CASE("search: headroom turns tight fits into rejections; misses are the smallest overflows") {
  Case c;
  c.system.gpu.hbm_capacity = GiB(80);
  SearchOptions opt;
  opt.threads = 1;
  const SearchResult loose = search(c.model, c.system, c.fw, c.space, opt);
  // A headroom as large as the capacity leaves nothing.
  opt.headroom = GiB(80);
  const SearchResult none = search(c.model, c.system, c.fw, c.space, opt);
  CHECK(none.feasible == 0);
  CHECK(none.rejected.at("headroom") == loose.feasible);
  REQUIRE(!none.nearest_misses.empty());
  for (size_t i = 1; i < none.nearest_misses.size(); ++i)
    CHECK(memory_overflow(none.nearest_misses[i], opt.headroom) >=
          memory_overflow(none.nearest_misses[i - 1], opt.headroom));
}

TEST_CASE("search: a raised cancel flag stops it") {
  const Case c;
  std::atomic<bool> cancel{true};
  SearchOptions opt;
  opt.cancel = &cancel;
  const SearchResult r = search(c.model, c.system, c.fw, c.space, opt);
  CHECK(r.cancelled);
  CHECK(r.evaluated == 0);
}

TEST_CASE("rejection_label") {
  CHECK(rejection_label("tp_divides_kv_heads") == "tp does not divide kv_heads");
  CHECK(rejection_label("oom_activations") == "out of memory (largest item: activations)");
  CHECK(rejection_label("some_new_code") == "some new code");
  CHECK(rejection_label("tsp_divides_kv_heads") == "tsp does not divide kv_heads");
  CHECK(rejection_label("sdp_holders") == "sdp keep x dp not a whole number of workers");
}

TEST_CASE("search: an exception in a worker thread becomes the search's error, not std::terminate (issue 12)") {
  Case c;
  c.system.gpu.hbm_bw = BytesPerSec(0);  // memory-bound kernels take forever: evaluate's invariant throws
  SearchOptions opt;
  opt.threads = 2;
  CHECK_THROWS_AS(search(c.model, c.system, c.fw, c.space, opt), std::logic_error);
}
