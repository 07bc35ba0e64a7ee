#include "kernels/coll_harness.h"

#include <algorithm>
#include <cstdio>

namespace shardplan::bench {

const char* const kCollUsage =
    "Collective benchmark (nccl-tests conventions; one JSON line per result on stdout).\n"
    "  --collectives LIST   all_reduce,all_gather,reduce_scatter,all_to_all,broadcast,send_recv (default all)\n"
    "  --groups LIST        group sizes (default: 2,4,... up to the world size)\n"
    "  --placements LIST    contiguous,strided (strided: members world/size apart, like a DP group)\n"
    "  --min-bytes SIZE     smallest nccl-tests size (default 1K; K/M/G are binary)\n"
    "  --max-bytes SIZE     largest (default 64M)\n"
    "  --factor F           size multiplier (default 2)\n"
    "  --warmup N           untimed launches per size (default 5)\n"
    "  --reps R             timed samples per size (default 5); each sample averages enough launches for ~5 ms\n"
    "  --skip-done FILE     skip (benchmark, params) rows already in FILE (resume)\n";
const std::vector<std::string> kCollFlags = {"collectives", "groups", "placements", "min-bytes", "max-bytes",
                                             "factor", "warmup", "reps", "skip-done", "help"};

CollShape coll_shape(Collective c, std::size_t bytes, int n) {
  CollShape s;
  const std::size_t elems = std::max<std::size_t>(bytes / sizeof(float), 4) & ~std::size_t{3};
  switch (c) {
    case Collective::all_reduce:
    case Collective::broadcast:
    case Collective::send_recv:
      s.send_elems = s.recv_elems = s.per_rank = elems;
      s.bytes = elems * sizeof(float);
      break;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: {
      const std::size_t per = std::max<std::size_t>(elems / n, 4) & ~std::size_t{3};
      s.per_rank = per;
      s.send_elems = c == Collective::all_gather ? per : per * n;
      s.recv_elems = c == Collective::reduce_scatter ? per : per * n;
      s.bytes = per * n * sizeof(float);
      break;
    }
  }
  return s;
}

float coll_input(Collective c, int r, int n, std::size_t i, std::size_t per_rank) {
  (void)c, (void)n, (void)per_rank;
  return static_cast<float>(8 * r + static_cast<int>(i % 8));
}

float coll_expected(Collective c, int r, int n, std::size_t i, std::size_t per) {
  const auto mod8 = [](std::size_t v) { return static_cast<int>(v % 8); };
  switch (c) {
    case Collective::all_reduce: return static_cast<float>(4 * n * (n - 1) + n * mod8(i));
    case Collective::all_gather: return static_cast<float>(8 * static_cast<int>(i / per) + mod8(i % per));
    case Collective::reduce_scatter: return static_cast<float>(4 * n * (n - 1) + n * mod8(r * per + i));
    case Collective::all_to_all:
      return static_cast<float>(8 * static_cast<int>(i / per) + mod8(r * per + i % per));
    case Collective::broadcast: return static_cast<float>(mod8(i));
    case Collective::send_recv: return static_cast<float>(8 * ((r - 1 + n) % n) + mod8(i));
  }
  return 0.0f;
}

namespace {

std::vector<Collective> parse_collectives(const std::string& list) {
  std::vector<Collective> out;
  for (const std::string& name : split(list, ',')) {
    const auto c = collective_from_name(name);
    if (!c) {
      std::fprintf(stderr, "--collectives: unknown collective '%s'\n%s", name.c_str(), kCollUsage);
      std::exit(2);
    }
    out.push_back(*c);
  }
  return out;
}

}  // namespace

void run_collective_sweep(CollBackend& b, const Args& args, Reporter& reporter) {
  const int world = b.world_size();
  reporter.set_enabled(b.world_rank() == 0);
  const auto colls = parse_collectives(
      args.str("collectives", "all_reduce,all_gather,reduce_scatter,all_to_all,broadcast,send_recv"));
  std::vector<int> groups;
  if (args.has("groups")) {
    for (const auto& g : split(args.str("groups", ""), ',')) groups.push_back(std::stoi(g));
  } else {
    for (int g = 2; g <= world; g *= 2) groups.push_back(g);
    if (groups.empty() || groups.back() != world) groups.push_back(world);
  }
  const auto placements = split(args.str("placements", "contiguous,strided"), ',');
  const auto sizes = size_sweep(args.integer("min-bytes", 1024), args.integer("max-bytes", 64LL << 20),
                                args.number("factor", 2.0));
  const int warmup = static_cast<int>(args.integer("warmup", 5));
  const int reps = static_cast<int>(args.integer("reps", 5));

  for (const int g : groups) {
    for (const std::string& placement : placements) {
      if (placement != "contiguous" && placement != "strided") {
        std::fprintf(stderr, "--placements: expected contiguous or strided, got '%s'\n", placement.c_str());
        std::exit(2);
      }
      const int stride = placement == "strided" ? world / g : 1;
      if (placement == "strided" && stride <= 1) continue;  // same as contiguous
      if (g < 2 || !b.set_group(g, stride)) continue;
      for (const Collective c : colls) {
        for (const std::size_t want : sizes) {
          const CollShape shape = coll_shape(c, want, g);
          const nlohmann::json params = {{"collective", collective_name(c)}, {"nranks", g}, {"stride", stride},
                                         {"bytes", shape.bytes}, {"dtype", "float32"}};
          if (reporter.done(params)) continue;
          b.prepare(c, shape);
          const long long wrong = b.check(c, shape);
          for (int i = 0; i < warmup; ++i) b.time(c, shape, 1);
          // Every rank must use the same iteration count: time() returns the world maximum, so this agrees.
          const int iters = iters_for(b.time(c, shape, 1), 5e-3);
          std::vector<double> samples;
          for (int r = 0; r < reps; ++r) samples.push_back(b.time(c, shape, iters));
          reporter.result(params, summarize(samples, iters), 0.0, static_cast<double>(shape.bytes), wrong);
        }
      }
    }
  }
}

}  // namespace shardplan::bench
