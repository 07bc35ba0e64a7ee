// `shardplan serve <predict|validate|search>`: the serving subcommands, one file each, grouped under one parent command
// (serve_cmd.cc) so main.cc's table gains one line.
#pragma once

#include <memory>
#include <string>

#include "apps/command.h"

namespace shardplan::cli {

std::unique_ptr<Command> make_serve_predict_command();
std::unique_ptr<Command> make_serve_validate_command();
std::unique_ptr<Command> make_serve_search_command();

}  // namespace shardplan::cli

namespace shardplan::serving {
struct ServingModel;
}
namespace shardplan {
struct Gpu;
}

namespace shardplan::cli {

/// serve predict --offload layer|tensor: places the tensors of one GPU's model between GPU and host and prints
/// the placement (serve_offload.cc). Returns the exit code.
struct OffloadRequest {
  std::string mode;  // "layer" or "tensor"
  std::string host;
  double vram_gib = 0;  // 0: the GPU's capacity
  int input_len = 512, output_len = 128, batch = 1, context_depth = 0;
  bool json = false;
};
int run_offload(const serving::ServingModel& sm, const Gpu& gpu, const OffloadRequest& req);

}  // namespace shardplan::cli
