// LibrarySearch::from_environment(): the directories ld.so would search and the objects already
// loaded, as the dynamic loader of this process sees them.
#include <glob.h>
#include <link.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "core/backend/backend_library.h"

namespace crosstrain::core {

namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// /etc/ld.so.conf: one directory per line, '#' comments, "include GLOB" lines (relative globs are
// relative to the including file's directory).
void read_ld_so_conf(const std::string& file, std::vector<std::string>& dirs, int depth) {
  if (depth > 8) return;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    if (line.rfind("include", 0) == 0 && line.size() > 7 && (line[7] == ' ' || line[7] == '\t')) {
      std::string pattern = trim(line.substr(8));
      if (!pattern.empty() && pattern[0] != '/') pattern = file.substr(0, file.rfind('/') + 1) + pattern;
      glob_t g{};
      if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) read_ld_so_conf(g.gl_pathv[i], dirs, depth + 1);
      globfree(&g);
    } else if (line[0] == '/') {
      dirs.push_back(line);
    }
  }
}

int collect_loaded(dl_phdr_info* info, size_t, void* data) {
  auto* names = static_cast<std::vector<std::string>*>(data);
  if (!info->dlpi_name || !*info->dlpi_name) return 0;
  std::string path = info->dlpi_name;
  names->push_back(path.substr(path.rfind('/') + 1));
  try {
    auto soname = read_elf_dynamic(path).soname;
    if (!soname.empty()) names->push_back(soname);
  } catch (const std::exception&) {
    // The vDSO and deleted files have no readable ELF file: their file name is enough.
  }
  return 0;
}

}  // namespace

LibrarySearch LibrarySearch::from_environment() {
  LibrarySearch s;
  if (const char* llp = std::getenv("LD_LIBRARY_PATH")) {
    std::string v = llp;
    size_t start = 0;
    while (start <= v.size()) {
      auto end = v.find_first_of(":;", start);
      if (end == std::string::npos) end = v.size();
      if (end > start) s.ld_library_path.push_back(v.substr(start, end - start));
      start = end + 1;
    }
  }
  read_ld_so_conf("/etc/ld.so.conf", s.system_dirs, 0);
#if defined(__x86_64__)
  const char* multiarch = "x86_64-linux-gnu";
#elif defined(__aarch64__)
  const char* multiarch = "aarch64-linux-gnu";
#else
  const char* multiarch = "";
#endif
  for (std::string base : {"/lib", "/usr/lib"}) {
    if (*multiarch) s.system_dirs.push_back(base + "/" + multiarch);
    s.system_dirs.push_back(base + "64");
    s.system_dirs.push_back(base);
  }
  dl_iterate_phdr(collect_loaded, &s.loaded);
  return s;
}

}  // namespace crosstrain::core
