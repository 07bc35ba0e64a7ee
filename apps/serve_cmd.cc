// shardplan serve: predict, validate (and later search) LLM serving. A parent command whose children are the
// serving subcommands; it dispatches to the one that was parsed.
#include <vector>

#include "apps/serve_command.h"

namespace shardplan::cli {

namespace {

class ServeCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("serve", "LLM serving: predict latency, throughput and memory; validate");
    sub->require_subcommand(1);
    children_.push_back(make_serve_predict_command());
    children_.push_back(make_serve_validate_command());
    children_.push_back(make_serve_search_command());
    for (auto& c : children_) subs_.push_back(c->setup(*sub));
    return sub;
  }
  int run() override {
    for (size_t i = 0; i < children_.size(); ++i)
      if (subs_[i]->parsed()) return children_[i]->run();
    return 1;
  }

 private:
  std::vector<std::unique_ptr<Command>> children_;
  std::vector<CLI::App*> subs_;
};

}  // namespace

std::unique_ptr<Command> make_serve_command() { return std::make_unique<ServeCommand>(); }

}  // namespace shardplan::cli
