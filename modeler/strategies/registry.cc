#include "modeler/strategies/strategy.h"

namespace shardplan {

const std::vector<const Strategy*>& all_strategies() {
  static const std::vector<const Strategy*> all = {
      &tensor_parallel(),
      &context_parallel(),
      &data_parallel(),
      &pipeline_parallel(),
  };
  return all;
}

}  // namespace shardplan
