// Console and JSON renderers of the device views (top kernels, launch delays, collectives,
// pageable copies, AI_CPU tasks, online compilation).
#include <sstream>

#include "report/table.h"
#include "report/units.h"
#include "tools/analyze/analysis_report.h"

namespace crosstrain::analyze {

using report::format_count;
using report::format_percent;
using report::format_us;

namespace {

std::string delay_line(const DelayStats& d) {
  return format_count(d.count) + " launches: mean " + format_us(d.mean_us) + ", median " + format_us(d.p50_us) +
         ", p95 " + format_us(d.p95_us) + ", max " + format_us(d.max_us);
}

void named_lines(std::ostringstream& out, const char* title, const std::vector<NamedTotal>& v, double us,
                 const TraceAnalysis& a) {
  if (v.empty()) return;
  out << title << ": " << format_us(us) << " (" << format_percent(a.share(us)) << " of step time):";
  for (size_t i = 0; i < v.size() && i < 5; ++i)
    out << " " << v[i].name << " x" << format_count(v[i].count) << " (" << format_us(v[i].total_us) << ")";
  out << "\n";
}

nlohmann::json delay_json(const DelayStats& d) {
  return {{"count", d.count}, {"mean_us", d.mean_us}, {"p50_us", d.p50_us}, {"p95_us", d.p95_us}, {"max_us", d.max_us}};
}

nlohmann::json named_json(const std::vector<NamedTotal>& v) {
  auto arr = nlohmann::json::array();
  for (const auto& n : v) arr.push_back({{"name", n.name}, {"count", n.count}, {"total_us", n.total_us}});
  return arr;
}

}  // namespace

std::string render_device_views_console(const TraceAnalysis& a, size_t top) {
  std::ostringstream out;
  if (!a.top_kernels.empty()) {
    double all = 0;
    for (const auto& k : a.top_kernels) all += k.total_us;
    report::Table t({"Kernel", "Calls", "Total", "Mean", "Min", "Max", "Share"});
    for (size_t i = 0; i < a.top_kernels.size() && i < top; ++i) {
      const auto& k = a.top_kernels[i];
      t.add_row({k.name.size() > 80 ? k.name.substr(0, 77) + "..." : k.name, format_count(k.count), format_us(k.total_us),
                 format_us(k.total_us / static_cast<double>(k.count)), format_us(k.min_us), format_us(k.max_us),
                 format_percent(a.kernel_us > 0 ? k.total_us / a.kernel_us : 0)});
    }
    out << "Top kernels (share of all compute-kernel time)\n" << t.render() << "\n";
  }
  if (a.launch_delay.count > 0) {
    out << "Launch delay (launch call start -> device start): " << delay_line(a.launch_delay) << "\n";
    if (a.idle_launch_latency.count > 0)
      out << "  into an idle device (launch call end -> device start): " << delay_line(a.idle_launch_latency) << "\n";
  }
  if (!a.stream_idle.empty()) {
    report::Table t({"Stream", "Busy", "Idle: host wait", "Idle: queued", "Idle: unlinked", "Idle: after last work"});
    for (size_t i = 0; i < a.stream_idle.size() && i < 16; ++i) {
      const auto& s = a.stream_idle[i];
      t.add_row({s.stream, format_us(s.busy_us), format_us(s.host_wait_us), format_us(s.queued_us),
                 format_us(s.unlinked_us), format_us(s.tail_us)});
    }
    out << "Device streams inside steps (idle split by cause: host wait = the next work was not launched yet; "
           "queued = launched but not started: launch latency or a wait on another stream)\n"
        << t.render() << "\n";
  }
  if (!a.collectives.empty()) {
    report::Table t({"Collective", "Calls", "Device time", "Mean", "Sized calls", "Bytes", "Alg. bandwidth"});
    for (const auto& c : a.collectives)
      t.add_row({c.name.size() > 60 ? c.name.substr(0, 57) + "..." : c.name, format_count(c.count), format_us(c.total_us),
                 format_us(c.total_us / static_cast<double>(c.count)), format_count(c.sized),
                 c.sized ? report::format_bytes(static_cast<int64_t>(c.bytes)) : "n/a",
                 c.sized ? report::format_fixed(c.bandwidth_gbps(), 2) + " GB/s" : "n/a"});
    out << "Collectives (bandwidth = message bytes / device time, when the trace records message sizes)\n"
        << t.render() << "\n";
  }
  named_lines(out, "Copies with pageable host memory", a.pageable_copies, a.pageable_copy_us, a);
  named_lines(out, "AI_CPU tasks", a.ai_cpu_tasks, a.ai_cpu_us, a);
  named_lines(out, "Online operator compilation", a.online_compile, a.online_compile_us, a);
  return out.str();
}

nlohmann::json device_views_to_json(const TraceAnalysis& a) {
  using nlohmann::json;
  json kernels = json::array();
  for (const auto& k : a.top_kernels)
    kernels.push_back({{"name", k.name}, {"count", k.count}, {"total_us", k.total_us}, {"min_us", k.min_us},
                       {"max_us", k.max_us}});
  json colls = json::array();
  for (const auto& c : a.collectives)
    colls.push_back({{"name", c.name}, {"count", c.count}, {"total_us", c.total_us}, {"sized_calls", c.sized},
                     {"bytes", c.bytes}, {"bandwidth_gbps", c.bandwidth_gbps()}});
  json streams = json::array();
  for (const auto& s : a.stream_idle)
    streams.push_back({{"stream", s.stream}, {"busy_us", s.busy_us}, {"host_wait_us", s.host_wait_us},
                       {"queued_us", s.queued_us}, {"unlinked_us", s.unlinked_us}, {"tail_us", s.tail_us}});
  return {{"top_kernels", kernels},
          {"stream_idle", streams},
          {"launch_delay", delay_json(a.launch_delay)},
          {"idle_launch_latency", delay_json(a.idle_launch_latency)},
          {"collectives", colls},
          {"pageable_copies", named_json(a.pageable_copies)},
          {"pageable_copy_us", a.pageable_copy_us},
          {"ai_cpu_tasks", named_json(a.ai_cpu_tasks)},
          {"ai_cpu_us", a.ai_cpu_us},
          {"online_compile", named_json(a.online_compile)},
          {"online_compile_us", a.online_compile_us},
          {"data_bound_steps", a.data_bound_steps}};
}

}  // namespace crosstrain::analyze
