// read_elf_dynamic(): DT_NEEDED, DT_SONAME, DT_RPATH and DT_RUNPATH of a 64-bit little-endian ELF
// object, read through the program headers (PT_DYNAMIC, and PT_LOAD to map DT_STRTAB's address to
// a file offset) so that stripped libraries, which keep no section names, work too. Only the
// headers and the dynamic string table are read, not the whole file (libtorch_npu.so is ~100 MB).
#include <elf.h>
#include <sys/utsname.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "core/backend/backend_library.h"

namespace crosstrain::core {

namespace {

std::string machine_name(uint16_t m) {
  switch (m) {
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    case EM_386: return "i386";
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    default: return "machine type " + std::to_string(m);
  }
}

uint16_t host_machine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#else
  return EM_NONE;
#endif
}

template <typename T>
void read_at(std::ifstream& in, uint64_t offset, T* out, size_t count, const std::string& path) {
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(sizeof(T) * count));
  if (!in) throw std::runtime_error(path + " is truncated or not a valid ELF file");
}

std::vector<std::string> split_path_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    auto end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

ElfDynamicInfo read_elf_dynamic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": no such file or not readable");
  unsigned char ident[EI_NIDENT] = {};
  in.read(reinterpret_cast<char*>(ident), EI_NIDENT);
  if (!in || std::memcmp(ident, ELFMAG, SELFMAG) != 0) throw std::runtime_error(path + " is not an ELF shared library");
  if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB)
    throw std::runtime_error(path + " is a 32-bit or big-endian ELF file; this machine needs 64-bit little-endian");
  Elf64_Ehdr eh{};
  read_at(in, 0, &eh, 1, path);
  if (host_machine() != EM_NONE && eh.e_machine != host_machine()) {
    utsname u{};
    uname(&u);
    throw std::runtime_error(path + " is built for " + machine_name(eh.e_machine) + ", this machine is " + u.machine +
                             ": install the wheel built for " + u.machine);
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0)
    throw std::runtime_error(path + " has no program headers (not a shared library)");
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  read_at(in, eh.e_phoff, ph.data(), ph.size(), path);

  const Elf64_Phdr* dyn = nullptr;
  for (const auto& p : ph)
    if (p.p_type == PT_DYNAMIC) dyn = &p;
  ElfDynamicInfo info;
  if (!dyn) return info;  // a static object needs nothing
  std::vector<Elf64_Dyn> entries(dyn->p_filesz / sizeof(Elf64_Dyn));
  read_at(in, dyn->p_offset, entries.data(), entries.size(), path);

  uint64_t strtab_addr = 0, strtab_size = 0;
  for (const auto& d : entries) {
    if (d.d_tag == DT_STRTAB) strtab_addr = d.d_un.d_ptr;
    if (d.d_tag == DT_STRSZ) strtab_size = d.d_un.d_val;
  }
  uint64_t strtab_offset = 0;
  bool mapped = false;
  for (const auto& p : ph) {
    if (p.p_type == PT_LOAD && strtab_addr >= p.p_vaddr && strtab_addr < p.p_vaddr + p.p_filesz) {
      strtab_offset = strtab_addr - p.p_vaddr + p.p_offset;
      mapped = true;
    }
  }
  if (!mapped || strtab_size == 0) throw std::runtime_error(path + ": its dynamic string table cannot be located");
  std::string strtab(strtab_size, '\0');
  read_at(in, strtab_offset, strtab.data(), strtab.size(), path);
  auto str = [&](uint64_t off) {
    if (off >= strtab.size()) throw std::runtime_error(path + ": dynamic string offset out of range");
    return std::string(strtab.c_str() + off);
  };
  for (const auto& d : entries) {
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_NEEDED) info.needed.push_back(str(d.d_un.d_val));
    if (d.d_tag == DT_SONAME) info.soname = str(d.d_un.d_val);
    if (d.d_tag == DT_RPATH) info.rpath = split_path_list(str(d.d_un.d_val));
    if (d.d_tag == DT_RUNPATH) info.runpath = split_path_list(str(d.d_un.d_val));
  }
  return info;
}

}  // namespace crosstrain::core
