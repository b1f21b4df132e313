#pragma once
// For the dataset fuzz targets: the input written as files in a per-process scratch folder, since
// the readers open datasets by path.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace crosstrain::fuzz {

inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("crosstrain_fuzz_" + std::to_string(::getpid()));
    return d;
  }();
  return dir;
}

// libFuzzer may end the process without running exit handlers: each input removes its files.
inline void clear() {
  std::error_code ec;
  std::filesystem::remove_all(scratch(), ec);
}

inline void put(const std::string& name, const uint8_t* data, size_t size) {
  std::filesystem::create_directories(scratch());
  std::ofstream(scratch() / name, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                            static_cast<std::streamsize>(size));
}

}  // namespace crosstrain::fuzz
