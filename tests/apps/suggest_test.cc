#include "apps/suggest.h"

#include <doctest/doctest.h>

using namespace shardplan::cli;

namespace {
struct Tree {
  CLI::App app;
  std::string model, what;
  int tp = 0;
  bool flag = false;
  Tree() {
    CLI::App* predict = app.add_subcommand("predict");
    predict->add_option("--model", model);
    predict->add_option("--tp", tp);
    predict->add_flag("--tp-overlap,!--no-tp-overlap", flag);
    CLI::App* profile = app.add_subcommand("profile");
    profile->add_subcommand("framework")->add_option("name", what);
    app.add_subcommand("list")->add_option("what", what);
  }
};
}  // namespace

TEST_CASE("unknown_argument_hint: the unknown command or flag, and the nearest known name") {
  Tree t;
  CHECK(unknown_argument_hint(t.app, {"predcit", "--model", "x"}) ==
        "unknown command 'predcit', did you mean 'predict'?");
  CHECK(unknown_argument_hint(t.app, {"predict", "--modle", "x"}) ==
        "predict: unknown flag '--modle', did you mean '--model'?");
  CHECK(unknown_argument_hint(t.app, {"predict", "--model", "x", "--tpp=2"}) ==
        "predict: unknown flag '--tpp', did you mean '--tp'?");
  CHECK(unknown_argument_hint(t.app, {"predict", "--no-tp-overlp"}) ==
        "predict: unknown flag '--no-tp-overlp', did you mean '--no-tp-overlap'?");
  CHECK(unknown_argument_hint(t.app, {"profile", "frmework"}) ==
        "profile: unknown command 'frmework', did you mean 'framework'?");
  CHECK(unknown_argument_hint(t.app, {"xyzzy"}) == "unknown command 'xyzzy'");
  // Known names, values of options and positional arguments are not reported.
  CHECK(unknown_argument_hint(t.app, {"predict", "--model", "predcit", "--no-tp-overlap"}).empty());
  CHECK(unknown_argument_hint(t.app, {"list", "modles"}).empty());
  CHECK(unknown_argument_hint(t.app, {"profile", "framework", "torchtitn"}).empty());
}
