// `shardplan serve <predict|validate>`: the serving subcommands, one file each, grouped under one parent command
// (serve_cmd.cc) so main.cc's table gains one line.
#pragma once

#include <memory>

#include "apps/command.h"

namespace shardplan::cli {

std::unique_ptr<Command> make_serve_predict_command();
std::unique_ptr<Command> make_serve_validate_command();

}  // namespace shardplan::cli
