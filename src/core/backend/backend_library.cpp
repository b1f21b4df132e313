#include "core/backend/backend_library.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>

namespace crosstrain::core {

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

std::string file_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string dir_name(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

bool is_file(const std::string& p) { return access(p.c_str(), R_OK) == 0; }

std::string expand_origin(std::string dir, const std::string& origin) {
  for (const std::string token : {"${ORIGIN}", "$ORIGIN"}) {
    for (auto pos = dir.find(token); pos != std::string::npos; pos = dir.find(token))
      dir.replace(pos, token.size(), origin);
  }
  return dir;
}

// An object on the resolution walk: its path, its dynamic section, and the RPATHs that ld.so
// inherits from the objects that loaded it (glibc uses a loader's DT_RPATH for the dependencies of
// its dependencies, as long as these carry no DT_RUNPATH).
struct Node {
  std::string path;
  ElfDynamicInfo dyn;
  std::vector<std::string> inherited_rpath;  // already $ORIGIN-expanded
};

std::vector<std::string> search_dirs(const Node& n, const LibrarySearch& s) {
  std::vector<std::string> dirs;
  const std::string origin = dir_name(n.path);
  if (n.dyn.runpath.empty()) {
    for (const auto& d : n.dyn.rpath) dirs.push_back(expand_origin(d, origin));
    dirs.insert(dirs.end(), n.inherited_rpath.begin(), n.inherited_rpath.end());
  }
  dirs.insert(dirs.end(), s.ld_library_path.begin(), s.ld_library_path.end());
  for (const auto& d : n.dyn.runpath) dirs.push_back(expand_origin(d, origin));
  dirs.insert(dirs.end(), s.system_dirs.begin(), s.system_dirs.end());
  return dirs;
}

std::string torch_lib_dir() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (file_name(name) == "libc10.so") *static_cast<std::string*>(data) = dir_name(name);
        return 0;
      },
      &found);
  return found;
}

std::string join_names(const std::vector<MissingLibrary>& libs) {
  std::string out;
  std::set<std::string> by;
  for (const auto& m : libs) {
    out += (out.empty() ? "" : ", ") + m.name;
    by.insert(m.needed_by);
  }
  std::string needed_by;
  for (const auto& b : by) needed_by += (needed_by.empty() ? "" : ", ") + b;
  return out + " (needed by " + needed_by + ")";
}

// The dynamic loader's words for what the ELF walk cannot see.
std::string explain_dlerror(const std::string& err) {
  const std::string marker = "undefined symbol: ";
  auto pos = err.find(marker);
  if (pos == std::string::npos) return "the dynamic loader reports: " + err;
  std::string symbol = err.substr(pos + marker.size());
  symbol = symbol.substr(0, symbol.find_first_of(" ,\n"));
  std::string where = err.substr(0, pos);
  where = file_name(where.substr(0, where.find(':')));
  std::string text = "symbol " + symbol + (where.empty() ? "" : " (wanted by " + where + ")") + " is defined by no loaded library";
  if (starts_with(symbol, "Py") || starts_with(symbol, "_Py"))
    return text + " - libtorch_python.so needs the Python runtime in the process: start crosstrain with "
                  "LD_PRELOAD set to the libpython of the Python that torch was installed for "
                  "(its directory: python3 -c \"import sysconfig; print(sysconfig.get_config_var('LIBDIR'))\")";
  if (starts_with(symbol, "acl") || starts_with(symbol, "Hccl") || starts_with(symbol, "hccl") ||
      symbol.find("N2ge") != std::string::npos)
    return text + " - the CANN toolkit found is older than this torch_npu expects: install the CANN version its "
                  "release notes pair with it, and source that toolkit's set_env.sh";
  return text + " - a dependency on the search path is another version than the library was built against";
}

}  // namespace

LibraryFamily classify_library(const std::string& name) {
  if (starts_with(name, "libascend_hal") || starts_with(name, "libdrvdsmi") || starts_with(name, "libdcmi"))
    return LibraryFamily::AscendDriver;
  if (starts_with(name, "libtorch") || starts_with(name, "libc10") || starts_with(name, "libshm"))
    return LibraryFamily::Torch;
  static const char* const cann_prefixes[] = {
      "libascend", "libacl", "libhccl", "libhcomm", "libge_", "libgraph", "libopapi", "libaclnn", "libruntime",
      "libprofapi", "libmsprof", "libmspti", "libc_sec", "libmmpa", "liberror_manager", "libregister",
      "libplatform", "libtiling_api", "libnnopbase", "libalog", "libunified_dlog", "libfmk_", "libatb",
      "liblowering", "libopsproto", "libcust_opapi", "libtsdclient", "libdatatransfer"};
  for (const char* p : cann_prefixes)
    if (starts_with(name, p)) return LibraryFamily::Cann;
  return LibraryFamily::Other;
}

LoadDiagnosis diagnose_library(const std::string& path, const LibrarySearch& search) {
  LoadDiagnosis d;
  d.path = path;
  std::deque<Node> queue;
  try {
    queue.push_back({path, read_elf_dynamic(path), {}});
  } catch (const std::exception& e) {
    d.file_problem = e.what();
    return d;
  }
  std::set<std::string> seen(search.loaded.begin(), search.loaded.end());
  std::set<std::string> reported;
  seen.insert(file_name(path));
  if (!queue.front().dyn.soname.empty()) seen.insert(queue.front().dyn.soname);
  while (!queue.empty()) {
    Node node = std::move(queue.front());
    queue.pop_front();
    std::vector<std::string> inherited;
    if (node.dyn.runpath.empty()) {
      for (const auto& r : node.dyn.rpath) inherited.push_back(expand_origin(r, dir_name(node.path)));
      inherited.insert(inherited.end(), node.inherited_rpath.begin(), node.inherited_rpath.end());
    }
    const auto dirs = search_dirs(node, search);
    for (const auto& need : node.dyn.needed) {
      if (seen.count(need) || reported.count(need)) continue;
      std::string found;
      if (need.find('/') != std::string::npos) {
        if (is_file(need)) found = need;
      } else {
        for (const auto& dir : dirs)
          if (is_file(dir + "/" + need)) {
            found = dir + "/" + need;
            break;
          }
      }
      if (found.empty()) {
        reported.insert(need);
        d.missing.push_back({need, file_name(node.path), classify_library(need)});
        continue;
      }
      seen.insert(need);
      try {
        queue.push_back({found, read_elf_dynamic(found), inherited});
      } catch (const std::exception& e) {
        // Found but unusable (another architecture, truncated): ld.so skips such files, so it is missing.
        reported.insert(need);
        d.missing.push_back({need, file_name(node.path), classify_library(need)});
      }
    }
  }
  return d;
}

std::string explain_load_failure(const std::string& path, const std::string& dlerror_text, const LibrarySearch& search) {
  const auto d = diagnose_library(path, search);
  std::string msg = "cannot load backend library " + path + ": ";
  if (!d.file_problem.empty()) {
    std::string problem = d.file_problem;
    if (starts_with(problem, path)) problem = "the file" + problem.substr(path.size());
    return msg + problem + " (torch_npu's is <site-packages>/torch_npu/lib/libtorch_npu.so)";
  }
  if (d.missing.empty()) return msg + explain_dlerror(dlerror_text);

  std::map<LibraryFamily, std::vector<MissingLibrary>> by_family;
  for (const auto& m : d.missing) by_family[m.family].push_back(m);
  std::vector<std::string> parts, remedies;
  for (const auto& [family, libs] : by_family) {
    switch (family) {
      case LibraryFamily::Cann:
        parts.push_back("Ascend CANN libraries not found: " + join_names(libs));
        remedies.push_back("install Ascend's CANN toolkit and source its set_env.sh (e.g. source "
                           "/usr/local/Ascend/ascend-toolkit/set_env.sh), which puts its lib64 on LD_LIBRARY_PATH");
        break;
      case LibraryFamily::AscendDriver:
        parts.push_back("Ascend driver libraries not found: " + join_names(libs));
        remedies.push_back("install the NPU driver and add /usr/local/Ascend/driver/lib64/driver and "
                           "/usr/local/Ascend/driver/lib64/common to LD_LIBRARY_PATH");
        break;
      case LibraryFamily::Torch: {
        parts.push_back("torch libraries not found: " + join_names(libs));
        const std::string dir = torch_lib_dir();
        remedies.push_back("add torch's lib directory (" + (dir.empty() ? std::string("<site-packages>/torch/lib") : dir) +
                           ") to LD_LIBRARY_PATH");
        break;
      }
      case LibraryFamily::Other:
        parts.push_back("libraries not found: " + join_names(libs));
        remedies.push_back("install what provides them or add their directories to LD_LIBRARY_PATH");
        break;
    }
  }
  for (size_t i = 0; i < parts.size(); ++i) msg += (i ? "; " : "") + parts[i];
  msg += ". To fix: ";
  for (size_t i = 0; i < remedies.size(); ++i) msg += (i ? "; " : "") + remedies[i];
  return msg;
}

void load_backend_library(const std::string& path) {
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) return;
  const char* err = dlerror();
  throw std::runtime_error(explain_load_failure(path, err ? err : "unknown error", LibrarySearch::from_environment()));
}

}  // namespace crosstrain::core
