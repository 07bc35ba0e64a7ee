#include "apps/serve_shared_flags.h"

#include <doctest/doctest.h>

#include <deque>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::cli;

namespace {

SharedServeFlags parse(std::vector<std::string> args, bool search = true) {
  static std::deque<CLI::App> apps;  // options point into the App: keep it alive
  CLI::App& app = apps.emplace_back();
  SharedServeFlags f;
  add_shared_serve_flags(&app, &f, search);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes arguments in reverse order
  app.parse(reversed);
  return f;
}

}  // namespace

TEST_CASE("the shared serve flags parse into one struct for predict and search") {
  const SharedServeFlags f = parse({"--prefix-hit", "0.5", "--sparsity", "2:4:mlp", "--low-rank", "64", "--max-batch",
                                    "48", "--mem-fraction", "0.8"});
  CHECK(f.prefix_hit == 0.5);
  CHECK(f.sparsity == "2:4:mlp");
  CHECK(f.low_rank == "64");
  CHECK(f.max_batch == 48);
  CHECK(f.mem_fraction == 0.8);
  CHECK(transforms_note(f) == "sparsity 2:4:mlp, low-rank 64");
  const auto t = parse_transforms(f);
  REQUIRE(t.size() == 2);
  CHECK(t[0].kind == serving::Transform::Kind::sparsify);
  CHECK(t[1].kind == serving::Transform::Kind::low_rank);
  CHECK(t[1].rank == 64);
  const SharedServeFlags none = parse({}, false);
  CHECK(transforms_note(none).empty());
  CHECK(parse_transforms(none).empty());
  CHECK(none.mem_fraction == 0);  // the engine default
}

TEST_CASE("bad shared serve flags are refused with the flag named") {
  CHECK_THROWS_AS(parse({"--mem-fraction", "1.5"}), CLI::ValidationError);
  CHECK_THROWS_AS(parse({"--mem-fraction", "0"}), CLI::ValidationError);
  CHECK_THROWS_AS(parse({"--prefix-hit", "1"}), CLI::ValidationError);
  CHECK_THROWS_AS(parse({"--max-batch", "0"}), CLI::ValidationError);
  SharedServeFlags f;
  f.sparsity = "3:4";
  CHECK_THROWS_WITH_AS(parse_transforms(f), doctest::Contains("--sparsity"), ConfigError);
  f.sparsity.clear();
  f.low_rank = "x";
  CHECK_THROWS_WITH_AS(parse_transforms(f), doctest::Contains("--low-rank"), ConfigError);
}

TEST_CASE("--max-batch caps the search's batch ladder and is tried itself") {
  const std::vector<int> ladder = {1, 2, 4, 8, 16, 32, 64};
  CHECK(capped_batches(ladder, 0) == ladder);
  CHECK(capped_batches(ladder, 16) == std::vector<int>{1, 2, 4, 8, 16});
  CHECK(capped_batches(ladder, 48) == std::vector<int>{1, 2, 4, 8, 16, 32, 48});
  CHECK(capped_batches(ladder, 1) == std::vector<int>{1});
}
