#include "modeler/strategies/strategy.h"

namespace shardplan {

const std::vector<const Strategy*>& all_strategies() {
  static const std::vector<const Strategy*> all = {
      &tensor_parallel(),
      &folded_tensor_sequence_parallel(),
      &context_parallel(),
      &expert_parallel(),
      &data_parallel(),
      &pipeline_parallel(),
      &subnetwork_data_parallel(),  // after pp: it drops a fraction of the stage's layers
  };
  return all;
}

}  // namespace shardplan
