#include "modeler/plan.h"

namespace shardplan {

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

const char* to_string(CpKind k) { return k == CpKind::ring ? "ring" : "allgather"; }

const char* to_string(SdpMask m) { return m == SdpMask::forward ? "forward" : "backward"; }

const char* to_string(SdpGranularity g) { return g == SdpGranularity::block ? "block" : "neuron"; }

const char* to_string(Dtype d) { return kDtypeNames[static_cast<int>(d)]; }

}  // namespace shardplan
