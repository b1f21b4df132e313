#pragma once
// Why an out-of-tree backend library (torch_npu's libtorch_npu.so, ...) does not load, in one
// message a user can act on. dlerror() names only the first missing dependency ("libhccl.so:
// cannot open shared object file"), which hides the other four CANN libraries and says nothing of
// the remedy. This unit reads the ELF dynamic sections itself, resolves every DT_NEEDED entry the
// way ld.so does (RPATH/$ORIGIN, LD_LIBRARY_PATH, RUNPATH, ld.so.conf directories, libraries
// already in the process), walks into the dependencies it finds, and names all that are missing,
// grouped by who provides them. No libtorch: it builds and is tested with CROSSTRAIN_WITH_TORCH=OFF.
//
//   if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL))
//     throw std::runtime_error(explain_load_failure(path, dlerror(), LibrarySearch::from_environment()));
#include <string>
#include <vector>

namespace crosstrain::core {

// The dynamic section of an ELF shared object.
struct ElfDynamicInfo {
  std::string soname;
  std::vector<std::string> needed;   // DT_NEEDED, in order
  std::vector<std::string> rpath;    // DT_RPATH entries, $ORIGIN unexpanded
  std::vector<std::string> runpath;  // DT_RUNPATH entries
};

// Throws std::runtime_error when the file is unreadable, not ELF, or built for another machine
// (the message says which: "built for aarch64, this machine is x86_64").
ElfDynamicInfo read_elf_dynamic(const std::string& path);

// Where the dynamic loader would look. from_environment() reads LD_LIBRARY_PATH, /etc/ld.so.conf
// (with its includes) and the default directories, and lists the libraries this process holds.
struct LibrarySearch {
  std::vector<std::string> ld_library_path;
  std::vector<std::string> system_dirs;
  std::vector<std::string> loaded;  // file names and sonames of objects already loaded
  static LibrarySearch from_environment();
};

// Who provides a library, which decides the remedy.
enum class LibraryFamily { Cann, AscendDriver, Torch, Other };
LibraryFamily classify_library(const std::string& name);

struct MissingLibrary {
  std::string name;       // "libhccl.so"
  std::string needed_by;  // file name of the object whose DT_NEEDED names it
  LibraryFamily family = LibraryFamily::Other;
};

struct LoadDiagnosis {
  std::string path;
  std::string file_problem;              // set when the file itself is the problem
  std::vector<MissingLibrary> missing;   // every unresolved dependency, the closest first
};

LoadDiagnosis diagnose_library(const std::string& path, const LibrarySearch& search);

// One line: what is missing, grouped by family, and the remedy for each family. dlerror_text is
// used only for what the ELF walk cannot see (an undefined symbol, a failing initializer).
std::string explain_load_failure(const std::string& path, const std::string& dlerror_text, const LibrarySearch& search);

// dlopen()s the library (RTLD_NOW | RTLD_GLOBAL); on failure throws std::runtime_error carrying
// explain_load_failure()'s message.
void load_backend_library(const std::string& path);

}  // namespace crosstrain::core
