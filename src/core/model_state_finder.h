#pragma once
// Finds the model's state dict in a checkpoint a training program wrote, as --weights and a
// Python checkpoint given to --resume need it. Tried in this order, the first that matches the
// model wins:
//   1. the root itself, when it maps names to tensors (torch.save(model.state_dict(), f));
//   2. the root's entries kModelStateEntries, in order: torchvision's reference and most scripts
//      ('model'), pytorch/examples' imagenet, timm and Lightning ('state_dict'), PyTorch's tutorial
//      ('model_state_dict'), pytorch-cifar ('net', 'network'), then the moving averages
//      ('model_ema', 'state_dict_ema') when no plain one matched.
// Keys are matched after removing the wrappers' prefixes when every key has them: 'module.'
// (DataParallel, DistributedDataParallel, and AveragedModel, whose 'n_averaged' counter is
// dropped) and '_orig_mod.' (torch.compile), in any order and number; failing that, one component
// that every key shares ('model.' of a Lightning module holding the network).
//
// A match is strict, as load_state_dict(strict=True): every model key present and no other,
// except BatchNorm's 'num_batches_tracked', which checkpoints from before PyTorch 0.4.1 lack and
// which no computation here reads: when absent, the model's own counter is kept (torch's loader does
// the same for such files, keyed on the module version in _metadata, which plain dicts lack).
// Otherwise std::runtime_error in one line: the root's keys, and for the closest candidate the
// first missing and unexpected keys.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/state_file.h"

namespace crosstrain::core {

inline const std::vector<std::string> kModelStateEntries = {
    "model", "state_dict", "model_state_dict", "net", "network", "model_ema", "state_dict_ema"};

struct FoundModelState {
  std::map<std::string, at::Tensor> tensors;  // under the model's names
  std::string entry;                          // "" (the root) or "['state_dict']"
  std::string stripped;                       // removed from every key: "module.", "model.", ...
  std::vector<std::string> dropped;           // keys that are no model's: "n_averaged"
  int64_t counters_kept = 0;                  // num_batches_tracked absent, the model's kept
  // The root as it is, with nothing stripped, dropped or kept.
  bool as_saved() const { return entry.empty() && stripped.empty() && dropped.empty() && counters_kept == 0; }
  // "['state_dict'] (122 tensors), prefix 'module.' stripped"; "the root (122 tensors)".
  std::string describe() const;
};

// `model_state`: core::model_state_dict(model); `unread`: what load_state_file did not read (a
// candidate holding one is named with its class); `source` starts every message.
FoundModelState find_model_state(const c10::IValue& root,
                                 const std::vector<std::pair<std::string, at::Tensor>>& model_state,
                                 const std::vector<UnreadValue>& unread, const std::string& source);

}  // namespace crosstrain::core
