#include "modeler/io/emit_script.h"

#include <sstream>

#include "modeler/io/emit_common.h"

namespace shardplan::io::detail {

std::string ScriptArgs::bash(const std::string& name) const {
  std::string s = name + "=(\n";
  for (const auto& [flag, values] : lines_) {
    s += "    " + flag;
    for (const std::string& v : values) s += " \"" + v + "\"";
    s += "\n";
  }
  return s + ")\n";
}

std::string bash_script(const std::string& header, const System& system, const std::string& env,
                        const std::string& program, const std::vector<std::pair<std::string, ScriptArgs>>& arrays,
                        const std::string& preamble) {
  std::ostringstream o;
  o << "#!/usr/bin/env bash\n"
    << header << "# Run it on every node (by hand with NODE_RANK=0..NNODES-1, or `srun --nodes=" << nodes_of(system)
    << " --ntasks-per-node=1 bash THIS_FILE`).\n"
    << "set -euo pipefail\n\n"
    << "NNODES=" << nodes_of(system) << "\n"
    << "GPUS_PER_NODE=" << gpus_per_node_of(system) << "\n"
    << "NODE_RANK=${NODE_RANK:-${SLURM_NODEID:-0}}\n"
    << "MASTER_ADDR=${MASTER_ADDR:-$(scontrol show hostnames \"${SLURM_JOB_NODELIST:-localhost}\" 2>/dev/null | head "
       "-n 1 "
       "|| echo localhost)}\n"
    << "MASTER_ADDR=${MASTER_ADDR:-localhost}\n"
    << "MASTER_PORT=${MASTER_PORT:-6000}\n";
  if (!env.empty()) o << "\n" << env;
  if (!preamble.empty()) o << "\n" << preamble;
  o << "\nLAUNCHER=(\n    torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" --node-rank "
       "\"$NODE_RANK\"\n"
    << "    --master-addr \"$MASTER_ADDR\" --master-port \"$MASTER_PORT\"\n)\n";
  for (const auto& [name, args] : arrays) o << "\n" << args.bash(name);
  o << "\nexec \"${LAUNCHER[@]}\" \"" << program << "\"";
  for (const auto& a : arrays) o << " \"${" << a.first << "[@]}\"";
  o << "\n";
  return o.str();
}

}  // namespace shardplan::io::detail
