// --resume: choosing the checkpoint and loading it into the trainer (tools/train/checkpoint.h).
#include <algorithm>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "core/model_state_finder.h"
#include "core/rng_state.h"
#include "core/state_file.h"
#include "tools/train/checkpoint.h"
#include "tools/train/trainer.h"

namespace crosstrain::train {

namespace fs = std::filesystem;

namespace {

// The first line of an exception's message, at most a few hundred characters: libtorch appends
// backtraces, and a hostile file can make a message of any size.
std::string short_reason(const std::exception& e) {
  std::string s = e.what();
  s = s.substr(0, s.find('\n'));
  if (s.size() > 400) s = s.substr(0, 400) + "...";
  return s;
}

void check_fingerprint(const core::StateDict& state, const TrainConfig& resolved, const std::string& path) {
  const auto diffs = fingerprint_differences(state, resolved);
  if (diffs.empty()) return;
  std::string list;
  for (const auto& d : diffs) list += (list.empty() ? "" : ", ") + d;
  throw std::invalid_argument("cannot resume from " + path + ": it was written with " + list +
                              "; resume with the same settings, or start fresh in another --checkpoint-dir");
}

// A named checkpoint that does not load is an error naming it. crosstrain's own checkpoint, whose
// recorded settings match the run's, is damaged when it does not fit (exit 1, like a truncated
// file); another program's that does not fit is the caller's choice (the exception's own kind).
[[noreturn]] void fail_named(const std::string& path, const core::StateDict& state, const std::exception& e) {
  const std::string what = "cannot resume from " + path + ": " + short_reason(e);
  if (core::state_has(state, "crosstrain") || !dynamic_cast<const std::invalid_argument*>(&e))
    throw std::runtime_error(what + (core::state_has(state, "crosstrain") ? " (the checkpoint is inconsistent)" : ""));
  throw std::invalid_argument(what);
}

}  // namespace

core::StateDict load_checkpoint_file(const fs::path& path) {
  // A script's checkpoint may hold objects no resume needs (argparse.Namespace under 'args'):
  // they read as None; a model state dict that needed one is refused by find_model_state.
  std::vector<core::UnreadValue> unread;
  c10::IValue v = core::load_state_file(path.string(), &unread);
  if (!v.isGenericDict()) throw std::runtime_error(path.string() + " does not hold a dict of state");
  auto d = v.toGenericDict();
  if (core::state_has(d, "crosstrain") && !core::state_has(d, "model"))
    throw std::runtime_error(path.string() + " has no 'model' entry");
  return d;
}

ResumePoint choose_resume(const std::string& spec, const fs::path& dir, const TrainConfig& resolved,
                          const ResumeLoad& load, std::ostream& messages) {
  ResumePoint p;
  if (spec.empty()) return p;
  if (spec != "auto") {
    const core::StateDict state = load_checkpoint_file(spec);
    check_fingerprint(state, resolved, spec);
    try {
      load(state);
    } catch (const std::exception& e) {
      fail_named(spec, state, e);
    }
    p.path = spec;
    return p;
  }
  if (dir.empty()) throw std::invalid_argument("--resume auto needs --checkpoint-dir");
  // Checkpoints are chosen by the step they hold, not by their names: a copy of step 3 named for
  // step 900 is a checkpoint of step 3 (said once), never the newest.
  struct Candidate {
    int64_t step;
    fs::path path;
  };
  std::vector<Candidate> candidates;
  for (const auto& path : list_checkpoints(dir)) {
    try {
      const core::StateDict state = load_checkpoint_file(path);
      const int64_t step = core::state_has(state, "step") ? core::state_int(state, "step", path.string()) : -1;
      if (step >= 0 && path.filename().string() != checkpoint_name(step))
        messages << "note: checkpoint " << path.string() << " holds step " << step
                 << ", not the step of its name: it is taken as step " << step << "\n";
      candidates.push_back({step, path});
    } catch (const std::exception& e) {
      messages << "note: skipping checkpoint " << path.string() << ": " << short_reason(e) << "\n";
      p.skipped.emplace_back(path.string(), short_reason(e));
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.step > b.step; });
  for (const auto& [step, path] : candidates) {
    std::string why;
    std::optional<core::StateDict> state;
    try {
      state = load_checkpoint_file(path);
    } catch (const std::exception& e) {
      why = short_reason(e);
    }
    if (state) {
      check_fingerprint(*state, resolved, path.string());  // a changed setting is the caller's to fix
      try {
        load(*state);  // the trainer is as it was when this throws
      } catch (const std::exception& e) {
        why = "it does not load: " + short_reason(e);
      }
    }
    if (why.empty()) {
      p.path = path.string();
      return p;
    }
    messages << "note: skipping checkpoint " << path.string() << ": " << why << "\n";
    p.skipped.emplace_back(path.string(), why);
  }
  if (p.skipped.empty()) messages << "note: no checkpoint in " << dir.string() << " yet: starting fresh\n";
  else messages << "note: no usable checkpoint in " << dir.string() << ": starting fresh\n";
  return p;
}

namespace {

// A torchvision-reference checkpoint's optimizer, renumbered to this run's parameter groups. Python's
// single group numbers parameters in model order; this run numbers its decay group first.
core::StateDict regroup_optimizer(Trainer& t, const core::StateDict& saved) {
  const auto ours = t.optimizer().state_dict();
  const auto our_groups = core::state_list(ours, "param_groups", "optimizer");
  const auto saved_groups = core::state_list(saved, "param_groups", "checkpoint optimizer");
  if (saved_groups.size() == our_groups.size()) return saved;
  if (saved_groups.size() != 1)
    throw std::invalid_argument("checkpoint optimizer has " + std::to_string(saved_groups.size()) +
                                " parameter groups; this run has " + std::to_string(our_groups.size()));
  const auto& c = t.plan().resolved;
  std::vector<std::string> model_order, decay, no_decay;
  for (const auto& p : t.model().named_parameters()) {
    if (!p.value().requires_grad()) continue;
    model_order.push_back(p.key());
    (c.no_decay_bn_bias && p.value().dim() <= 1 ? no_decay : decay).push_back(p.key());
  }
  std::map<std::string, int64_t> our_index;
  int64_t i = 0;
  for (const auto& n : decay) our_index[n] = i++;
  for (const auto& n : no_decay) our_index[n] = i++;
  const auto saved_state = core::state_dict_at(saved, "state", "checkpoint optimizer");
  c10::impl::GenericDict state(c10::IntType::get(), c10::AnyType::get());
  for (const auto& item : saved_state) {
    const int64_t j = item.key().toInt();
    if (j < 0 || j >= static_cast<int64_t>(model_order.size()))
      throw std::invalid_argument("checkpoint optimizer state names parameter " + std::to_string(j) +
                                  "; the model has " + std::to_string(model_order.size()));
    state.insert(our_index.at(model_order[static_cast<size_t>(j)]), item.value());
  }
  const double lr = core::state_double(saved_groups.front().toGenericDict(), "lr", "checkpoint optimizer");
  c10::impl::GenericList groups(c10::AnyType::get());
  for (const auto& g : our_groups) {
    auto copy = g.toGenericDict().copy();
    copy.insert_or_assign("lr", lr);
    groups.push_back(copy);
  }
  core::StateDict out = core::make_state_dict();
  out.insert("state", state);
  out.insert("param_groups", groups);
  return out;
}

}  // namespace

ScriptEpoch script_epoch(const core::StateDict& state) {
  using core::state_has;
  if (!state_has(state, "epoch")) return {0, "no 'epoch': starting at epoch 0"};
  const int64_t epoch = core::state_int(state, "epoch", "checkpoint");
  if (epoch < 0) throw std::invalid_argument("checkpoint 'epoch' is negative (" + std::to_string(epoch) + ")");
  const std::string e = "'epoch' " + std::to_string(epoch);
  if (state_has(state, "state_dict") && (state_has(state, "best_acc1") || state_has(state, "best_prec1")))
    return {epoch, e + " read as pytorch/examples' imagenet writes it (keys 'state_dict', '" +
                       (state_has(state, "best_acc1") ? "best_acc1" : "best_prec1") + "'): the epoch to run next"};
  if (state_has(state, "state_dict") && state_has(state, "version")) {
    const int64_t version = core::state_int(state, "version", "checkpoint");
    if (version > 1)
      return {epoch + 1, e + " read as timm writes it (keys 'state_dict', 'version' " + std::to_string(version) +
                             "): the last finished epoch"};
    return {epoch, e + " read as timm's version 1 writes it (keys 'state_dict', 'version' " + std::to_string(version) +
                       "): the epoch to run next"};
  }
  if (state_has(state, "model") && state_has(state, "lr_scheduler"))
    return {epoch + 1, e + " read as torchvision's classification reference writes it (keys 'model', "
                           "'lr_scheduler'): the last finished epoch"};
  return {epoch + 1, e + " taken as the last finished epoch (torchvision's reference's convention; the keys do not "
                         "say which)"};
}

void resume_trainer(Trainer& trainer, const core::StateDict& state, int64_t batches_per_epoch, std::ostream* notes) {
  if (core::state_has(state, "crosstrain")) {
    trainer.load_state_dict(state);
    return;
  }
  // A Python training script's checkpoint: resume at the start of the epoch its script would run next.
  const std::string where = "checkpoint";
  const ScriptEpoch next = script_epoch(state);
  const int64_t step = next.next * std::max<int64_t>(1, batches_per_epoch);
  const auto pos = trainer.source().position();
  core::StateDict d = core::make_state_dict();
  const core::FoundModelState found =
      core::find_model_state(state, core::model_state_dict(trainer.model()), {}, where);
  if (notes && !found.as_saved()) *notes << "note: " << where << ": loaded " << found.describe() << "\n";
  if (notes)
    *notes << "note: " << where << ": " << next.convention << "; resuming at the start of epoch " << next.next
           << " (step " << step << ")\n";
  core::StateDict model = core::make_state_dict();
  for (const auto& [name, t] : found.tensors) model.insert(name, t);
  d.insert("model", model);
  const char* optimizer = core::state_has(state, "optimizer") ? "optimizer" : "optimizer_state_dict";
  d.insert("optimizer", core::state_has(state, optimizer)
                            ? regroup_optimizer(trainer, core::state_dict_at(state, optimizer, where))
                            : trainer.optimizer().state_dict());
  d.insert("scaler", core::state_has(state, "scaler") ? core::state_value(state, "scaler", where)
                                                      : c10::IValue(core::make_state_dict()));
  core::StateDict sched = core::make_state_dict();
  sched.insert("last_epoch", step);
  d.insert("lr_scheduler", sched);
  d.insert("rng", core::rng_state_dict(at::kCPU));
  core::StateDict data = core::make_state_dict();
  data.insert("epoch", next.next);
  data.insert("batch", int64_t{0});
  data.insert("seed", static_cast<int64_t>(pos.seed));
  d.insert("data", data);
  d.insert("step", step);
  trainer.load_state_dict(d);
}

}  // namespace crosstrain::train
