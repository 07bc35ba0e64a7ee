#include "modeler/serving/serving_model.h"

#include <map>
#include <string>

namespace shardplan::serving {

namespace {

LinearSpec average(const std::vector<const WeightTensor*>& ts) {
  LinearSpec s;
  const WeightTensor& t0 = *ts.front();
  s.n = t0.n;
  s.k = t0.k;
  s.experts = t0.experts;
  s.split = t0.split;
  s.kv = t0.kv;
  s.router = t0.role == TensorRole::router;
  s.format = t0.format;
  s.xf = t0.xf;
  double b = 0;
  for (const auto* t : ts) b += t->bytes.v;
  s.bytes = Bytes(b / static_cast<double>(ts.size()));
  return s;
}

}  // namespace

ServingModel make_serving_model(const ModelDesc& m, const Precision& p) { return make_serving_model(m, p, {}); }

ServingModel make_serving_model(const ModelDesc& m, const Precision& p, const std::vector<Transform>& transforms) {
  ServingModel sm;
  sm.model = m;
  sm.precision = p;
  sm.tensors = model_tensors(m, p);
  apply_transforms(&sm.tensors, transforms);
  // Group the block tensors by (class, name stem) and average their bytes over the class's layers.
  std::map<std::pair<int, std::string>, std::vector<const WeightTensor*>> groups;
  std::map<int, int> class_count;
  auto class_of = [&](int layer) { return (is_moe_layer(m, layer) ? 2 : 0) + (is_sliding_layer(m, layer) ? 1 : 0); };
  for (int i = 0; i < m.layers; ++i) ++class_count[class_of(i)];
  for (const auto& t : sm.tensors) {
    if (t.role == TensorRole::token_embd) {
      sm.embedding_bytes = t.bytes;
      continue;
    }
    if (t.role == TensorRole::output) {
      sm.lm_head = average({&t});
      continue;
    }
    const std::string stem = t.name.substr(t.name.find('.', 4) + 1);
    groups[{class_of(t.layer), stem}].push_back(&t);
  }
  if (m.tied_embeddings) {
    for (const auto& t : sm.tensors)
      if (t.role == TensorRole::token_embd) {
        sm.lm_head = average({&t});
        sm.lm_head.n = m.vocab;
        sm.lm_head.k = m.hidden;
      }
  }
  for (const auto& [cls, count] : class_count) {
    LayerClass c;
    c.count = count;
    c.moe = cls >= 2;
    c.sliding = cls % 2 == 1;
    for (const auto& [key, ts] : groups) {
      if (key.first != cls) continue;
      if (key.second == "norms") {
        c.norm_bytes = average(ts).bytes;
        continue;
      }
      LinearSpec s = average(ts);
      (s.experts > 0 ? c.experts : c.linears).push_back(s);
    }
    sm.classes.push_back(std::move(c));
  }
  return sm;
}

}  // namespace shardplan::serving
