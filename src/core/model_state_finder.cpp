#include "core/model_state_finder.h"

#include <set>
#include <stdexcept>

#include "core/torchsave/format_error.h"

namespace crosstrain::core {
namespace {

constexpr size_t kKeysShown = 5;
const std::string kCounter = "num_batches_tracked";

bool is_counter(const std::string& key) {
  return key.size() >= kCounter.size() && key.compare(key.size() - kCounter.size(), kCounter.size(), kCounter) == 0;
}

// Keys in messages: at most `count` of them, each shortened (a file may hold a 4 MB key).
std::string quoted(const std::string& key) { return "'" + torchsave::shown(key) + "'"; }
std::string quoted_list(const std::vector<std::string>& keys, size_t count = kKeysShown) {
  std::string s;
  for (size_t i = 0; i < keys.size() && i < count; ++i) s += (i ? ", " : "") + quoted(keys[i]);
  if (keys.size() > count) s += ", ... (" + std::to_string(keys.size()) + " in all)";
  return s;
}

using Entries = std::vector<std::pair<std::string, at::Tensor>>;

// A candidate as it compares with the model after its prefixes are removed.
struct Attempt {
  std::string entry;  // "" for the root
  Entries entries;
  std::string stripped;
  std::vector<std::string> dropped, missing, unexpected;
  int64_t counters_absent = 0;
  bool matches() const { return missing.empty() && unexpected.empty(); }
  size_t distance() const { return missing.size() + unexpected.size(); }
};

bool starts_at(const std::string& s, size_t at, const std::string& p) {
  return s.size() >= at + p.size() && s.compare(at, p.size(), p) == 0;
}

bool all_start_with(const Entries& e, const std::string& prefix, size_t at = 0) {
  for (const auto& [k, v] : e)
    if (!starts_at(k, at, prefix)) return false;
  return !e.empty();
}

void strip(Attempt& a, const std::string& prefix) {
  for (auto& [k, v] : a.entries) k.erase(0, prefix.size());
  a.stripped += prefix;
}

// Removes 'module.' and '_orig_mod.' while every key has one; AveragedModel's 'n_averaged' goes
// with the 'module.' of the network it averages. The keys are cut once, at the end: a level costs
// a look at each key, never a copy, so time stays linear in the keys' length however many levels
// a file stacks.
void strip_wrappers(Attempt& a) {
  const std::string module = "module.", orig_mod = "_orig_mod.", n_averaged = "n_averaged";
  size_t at = 0;  // characters every key has lost so far
  for (;;) {
    for (size_t i = 0; i < a.entries.size() && a.entries.size() >= 2; ++i) {
      const std::string& k = a.entries[i].first;
      if (k.size() != at + n_averaged.size() || !starts_at(k, at, n_averaged)) continue;
      bool rest = true;
      for (size_t j = 0; j < a.entries.size() && rest; ++j) rest = j == i || starts_at(a.entries[j].first, at, module);
      if (!rest) break;
      a.dropped.push_back(n_averaged);
      a.entries.erase(a.entries.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
    const std::string* prefix = all_start_with(a.entries, module, at)     ? &module
                                : all_start_with(a.entries, orig_mod, at) ? &orig_mod
                                                                          : nullptr;
    if (!prefix) break;
    at += prefix->size();
    a.stripped += *prefix;
  }
  if (at > 0)
    for (auto& [k, v] : a.entries) k.erase(0, at);
}

// The model's keys, as a set and in the model's order (missing keys are listed in it).
struct ModelKeys {
  std::set<std::string> set;
  std::vector<std::string> order;
};

void compare(Attempt& a, const ModelKeys& model) {
  std::set<std::string> have;
  a.missing.clear(), a.unexpected.clear(), a.counters_absent = 0;
  for (const auto& [k, v] : a.entries) {
    have.insert(k);
    if (!model.set.count(k)) a.unexpected.push_back(k);
  }
  for (const auto& k : model.order) {
    if (have.count(k)) continue;
    if (is_counter(k)) {
      ++a.counters_absent;
    } else {
      a.missing.push_back(k);
    }
  }
}

Attempt attempt(const std::string& entry, Entries entries, const ModelKeys& model_keys) {
  Attempt a;
  a.entry = entry;
  a.entries = std::move(entries);
  strip_wrappers(a);
  compare(a, model_keys);
  if (a.matches() || a.entries.empty()) return a;
  // One component every key shares ("model." of a Lightning module), then the wrappers again.
  const std::string& first = a.entries.front().first;
  const size_t dot = first.find('.');
  if (dot == std::string::npos) return a;
  Attempt b = a;
  const std::string prefix = first.substr(0, dot + 1);
  if (!all_start_with(b.entries, prefix)) return a;
  strip(b, prefix);
  strip_wrappers(b);
  compare(b, model_keys);
  return b.matches() ? b : a;
}

const char* kind_of(const c10::IValue& v) {
  if (v.isNone()) return "None";
  if (v.isGenericDict()) return "dict";
  if (v.isList()) return "list";
  if (v.isTuple()) return "tuple";
  if (v.isString()) return "string";
  if (v.isInt() || v.isDouble() || v.isBool()) return "number";
  return "value";
}

// The dict's entries when it maps strings to tensors; otherwise why not.
bool as_entries(const c10::IValue& v, const std::string& entry, const std::vector<UnreadValue>& unread,
                Entries& out, std::string& why) {
  for (const auto& u : unread)
    if (u.name == entry) return why = entry + " is a " + u.class_name + " object, not a state dict", false;
  if (!v.isGenericDict()) return why = entry + " is a " + kind_of(v) + ", not a state dict", false;
  const auto d = v.toGenericDict();
  if (d.size() == 0) return why = entry + " is empty", false;
  for (const auto& item : d) {
    if (!item.key().isString()) return why = entry + " has a key that is not a string", false;
    const std::string& k = item.key().toStringRef();
    if (!item.value().isTensor()) {
      std::string kind = kind_of(item.value());
      for (const auto& u : unread)
        if (u.name == entry + "['" + torchsave::shown(k) + "']") kind = u.class_name + " object";
      return why = entry + "[" + quoted(k) + "] is a " + kind + ", not a tensor", false;
    }
    out.emplace_back(k, item.value().toTensor());
  }
  return true;
}

}  // namespace

std::string FoundModelState::describe() const {
  std::string s = (entry.empty() ? "the root" : entry) + " (" + std::to_string(tensors.size()) + " tensors)";
  if (!stripped.empty()) s += ", prefix " + quoted(stripped) + " stripped";
  if (!dropped.empty()) s += ", " + quoted_list(dropped) + " dropped";
  if (counters_kept > 0)
    s += ", " + std::to_string(counters_kept) + " BatchNorm num_batches_tracked absent (the model's kept)";
  return s;
}

FoundModelState find_model_state(const c10::IValue& root, const Entries& model_state,
                                 const std::vector<UnreadValue>& unread, const std::string& source) {
  if (!root.isGenericDict())
    throw std::runtime_error(source + " does not hold a dict; save it with torch.save(model.state_dict(), path)");
  ModelKeys model_keys;
  for (const auto& [k, v] : model_state) model_keys.set.insert(k), model_keys.order.push_back(k);

  std::vector<Attempt> tried;
  std::vector<std::string> refusals;  // candidates that are no state dict, and why
  std::vector<std::string> root_keys;
  const auto d = root.toGenericDict();
  for (const auto& item : d) root_keys.push_back(item.key().isString() ? item.key().toStringRef() : "(not a string)");
  auto consider = [&](const std::string& entry, const c10::IValue& v, bool say_why) {
    Entries entries;
    std::string why;
    if (!as_entries(v, entry, unread, entries, why)) {
      if (say_why) refusals.push_back(why);
      return false;
    }
    tried.push_back(attempt(entry, std::move(entries), model_keys));
    return tried.back().matches();
  };
  bool found = consider("", root, false);
  for (const auto& name : kModelStateEntries) {
    if (found) break;
    auto it = d.find(c10::IValue(name));
    if (it != d.end()) found = consider("['" + name + "']", it->value(), true);
  }
  if (!found) {
    std::string msg = source + ": no state dict for this model found (top-level keys " + quoted_list(root_keys, 10) +
                      "; tried the root and " + quoted_list(kModelStateEntries, kModelStateEntries.size()) + ")";
    const Attempt* best = nullptr;
    for (const auto& a : tried)
      if (!best || a.distance() < best->distance()) best = &a;
    if (best) {
      msg += "; closest: " + (best->entry.empty() ? std::string("the root") : best->entry) + " (" +
             std::to_string(best->entries.size()) + " tensors" +
             (best->stripped.empty() ? "" : ", prefix " + quoted(best->stripped) + " stripped") + ")";
      if (!best->missing.empty())
        msg += ", missing " + std::to_string(best->missing.size()) + ": " + quoted_list(best->missing);
      if (!best->unexpected.empty())
        msg += ", unexpected " + std::to_string(best->unexpected.size()) + ": " + quoted_list(best->unexpected);
    }
    for (const auto& r : refusals) msg += "; " + r;
    throw std::runtime_error(msg);
  }
  Attempt& a = tried.back();
  FoundModelState f;
  f.entry = a.entry;
  f.stripped = a.stripped;
  f.dropped = a.dropped;
  f.counters_kept = a.counters_absent;
  for (auto& [k, v] : a.entries) f.tensors.emplace(k, v);
  for (const auto& [k, v] : model_state)
    if (!f.tensors.count(k)) f.tensors.emplace(k, v.detach().clone());  // an absent counter: the model's
  return f;
}

}  // namespace crosstrain::core
