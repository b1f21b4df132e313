#include "tools/run/align_commands.h"

#include <ctime>
#include <filesystem>
#include <iostream>

#include "tools/run/command_words.h"

namespace fs = std::filesystem;

namespace crosstrain::run {

namespace {

std::string default_out_dir() {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "align-%Y%m%d-%H%M%S", std::localtime(&now));
  return stamp;
}

// The dump a side's comparison reads: DIR, or DIR/rank0 when the side ran as ranks.
std::string comparable_dump(const std::string& dir) {
  std::error_code ec;
  if (fs::is_regular_file(fs::path(dir) / "index.jsonl", ec)) return dir;
  if (fs::is_regular_file(fs::path(dir) / "rank0" / "index.jsonl", ec)) return (fs::path(dir) / "rank0").string();
  return {};
}

struct Side {
  std::string name;  // "A" or "B"
  CommandWords words;
};

Side side_of(const char* name, const std::string& text, const std::map<std::string, std::string>& env,
             const std::vector<std::string>& command) {
  Side s{name, {}};
  if (!text.empty()) {
    if (looks_like_key_values(text))
      throw std::invalid_argument(std::string("--") + (name[0] == 'A' ? "a" : "b") + " \"" + text +
                                  "\" is a setup of crosstrain's own models; the other side is a command: give "
                                  "both as commands (e.g. \"python train.py --device cpu\") or both as key=value setups");
    s.words = split_command(text);
  } else {
    if (command.empty()) throw std::invalid_argument(std::string("side ") + name + " has no command");
    s.words.argv = command;
  }
  for (const auto& [k, v] : env) s.words.env[k] = v;
  return s;
}

void run_side(const Side& side, const AlignCommands& req, const std::string& dump, const RunOptions& options) {
  RunRequest r = req.shared;
  r.command = side.words.argv;
  r.options.set("dump", dump);
  r.options.set("dump_overwrite", false);
  if (side.name == "A") r.options.set("test_perturb", "");  // the test disturbance belongs to B
  RunOptions o = options;
  o.extra_env = side.words.env;
  const std::string label = side.name;
  auto parent = options.note;
  o.note = [label, parent](const std::string& line) {
    if (parent) parent(label + ": " + line);
    else std::cerr << "crosstrain align: " << label << ": " << line << "\n";
  };
  const int status = run_command(r, o);
  if (status != 0)
    throw AlignSideError("run " + side.name + " failed (exit status " + std::to_string(status) + "): " +
                         side.words.argv.front() + (side.words.argv.size() > 1 ? " " + side.words.argv[1] : "") + " ...");
  if (comparable_dump(dump).empty())
    throw AlignSideError("run " + side.name + " wrote no dump in " + dump +
                         ": its command never reached a dumped step (no optimizer step, or --dump-steps past its end)");
}

}  // namespace

AlignCommandsResult align_commands(const AlignCommands& req, const RunOptions& options) {
  const Side a = side_of("A", req.a, req.a_env, req.command);
  const Side b = side_of("B", req.b, req.b_env, req.command);
  // Both sides' options, as each side's run will check them, before anything is created or started.
  AgentOptions both = req.shared.options;
  both.set("dump", "align");
  check(both);
  AlignCommandsResult out;
  out.out_dir = req.out.empty() ? default_out_dir() : req.out;
  std::error_code ec;
  for (const char* s : {"a", "b"})
    if (fs::exists(fs::path(out.out_dir) / s, ec))
      throw std::invalid_argument("align: " + (fs::path(out.out_dir) / s).string() + " already exists; choose another --out");
  fs::create_directories(out.out_dir, ec);
  if (ec) throw std::runtime_error("align: cannot create " + out.out_dir + ": " + ec.message());
  out.a_argv = a.words.argv;
  out.b_argv = b.words.argv;
  run_side(a, req, (fs::path(out.out_dir) / "a").string(), options);
  run_side(b, req, (fs::path(out.out_dir) / "b").string(), options);
  out.dump_a = comparable_dump((fs::path(out.out_dir) / "a").string());
  out.dump_b = comparable_dump((fs::path(out.out_dir) / "b").string());
  out.result = compare::compare_paths(out.dump_a, out.dump_b, req.compare);
  return out;
}

}  // namespace crosstrain::run
