#include "tools/analyze/trace.h"

#include <cstring>

namespace crosstrain::analyze {

namespace {
uint64_t hash_bytes(std::string_view s) {
  // Eight bytes per step: kernel names run to a hundred characters and every span has one.
  uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0xC4CEB9FE1A85EC53ull;
  return h ^ (h >> 29);
}
}  // namespace

StringTable::StringTable() {
  strings_.emplace_back();
  hashes_.push_back(hash_bytes(""));
  slots_.assign(1024, 0);
  size_t slot = hashes_[0] & (slots_.size() - 1);
  slots_[slot] = 1;
}

void StringTable::grow() {
  std::vector<uint32_t> slots(slots_.size() * 2, 0);
  for (uint32_t id = 0; id < strings_.size(); ++id) {
    size_t s = hashes_[id] & (slots.size() - 1);
    while (slots[s] != 0) s = (s + 1) & (slots.size() - 1);
    slots[s] = id + 1;
  }
  slots_.swap(slots);
}

uint32_t StringTable::intern(std::string_view s) {
  uint64_t h = hash_bytes(s);
  size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    uint32_t v = slots_[i];
    if (v == 0) break;
    if (hashes_[v - 1] == h && strings_[v - 1] == s) return v - 1;
  }
  auto id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  hashes_.push_back(h);
  if (strings_.size() * 2 > slots_.size()) {
    grow();
  } else {
    size_t i = h & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = id + 1;
  }
  return id;
}

const char* format_name(TraceFormat f) {
  switch (f) {
    case TraceFormat::Kineto: return "kineto";
    case TraceFormat::LegacyAutograd: return "autograd-legacy";
    case TraceFormat::Ascend: return "ascend";
  }
  return "unknown";
}

uint32_t Trace::track_of(TrackKey key) {
  // Consecutive events mostly share a thread: skip the hash lookup then.
  if (last_track_ != UINT32_MAX && tracks[last_track_].key == key) return last_track_;
  auto it = track_index_.find(key);
  if (it != track_index_.end()) return last_track_ = it->second;
  auto id = static_cast<uint32_t>(tracks.size());
  tracks.push_back(Track{key});
  track_index_.emplace(key, id);
  return last_track_ = id;
}

std::string Trace::pid_label(int64_t pid) const {
  if (pid >= kStringIdFlag) return strings.str(static_cast<uint32_t>(pid - kStringIdFlag));
  return std::to_string(pid);
}

}  // namespace crosstrain::analyze
