#include "modeler/io/trace_json.h"

#include <set>

namespace shardplan::io {

using nlohmann::json;

json trace_json(const Timeline& t, const std::string& title) {
  json events = json::array();
  std::set<std::pair<int, int>> used;  // (stage, track) pairs that have events: only those get a name
  for (const TimelineEvent& e : t.events) used.insert({e.stage, static_cast<int>(e.track)});
  for (int st = 0; st < t.stages; ++st) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", st}, {"tid", 0},
                      {"args", {{"name", "stage " + std::to_string(st)}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", st}, {"tid", 0},
                      {"args", {{"sort_index", st}}}});
  }
  for (const auto& [stage, track] : used) {
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", stage}, {"tid", track},
                      {"args", {{"name", to_string(static_cast<Track>(track))}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", stage}, {"tid", track},
                      {"args", {{"sort_index", track}}}});
  }
  for (const TimelineEvent& e : t.events) {
    json ev = {{"ph", "X"}, {"name", e.name}, {"cat", to_string(e.track)}, {"pid", e.stage},
               {"tid", static_cast<int>(e.track)}, {"ts", e.start_us}, {"dur", e.dur_us}};
    if (e.microbatch >= 0) ev["args"] = {{"microbatch", e.microbatch}, {"chunk", e.chunk}};
    events.push_back(std::move(ev));
  }
  return json{{"traceEvents", events},
              {"displayTimeUnit", "ms"},
              {"otherData",
               {{"shardplan_version", SHARDPLAN_VERSION}, {"title", title}, {"step_us", t.step_us},
                {"pipeline_us", t.pipeline_us}}}};
}

}  // namespace shardplan::io
