#pragma once
// State dicts the way PyTorch lays them out: nested dicts of strings, numbers, lists and tensors, so
// what crosstrain saves reads in Python as a torch.optim / torch.amp / lr_scheduler state_dict()
// and what Python saved reads back here (core::load_state_file yields the same IValue tree).
//
//   StateDict d = make_state_dict();
//   d.insert("scale", 65536.0);
//   double s = state_double(d, "scale", "loss scaler");   // std::invalid_argument names what is missing
#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>
#include <vector>

namespace crosstrain::core {

using StateDict = c10::impl::GenericDict;

// A dict with string keys and values of any kind.
StateDict make_state_dict();

// Typed reads; `where` names the state dict in errors ("loss scaler state: missing key 'scale'").
const c10::IValue& state_value(const StateDict& d, const std::string& key, const std::string& where);
StateDict state_dict_at(const StateDict& d, const std::string& key, const std::string& where);
double state_double(const StateDict& d, const std::string& key, const std::string& where);  // int or float
int64_t state_int(const StateDict& d, const std::string& key, const std::string& where);
bool state_bool(const StateDict& d, const std::string& key, const std::string& where);
std::string state_string(const StateDict& d, const std::string& key, const std::string& where);
at::Tensor state_tensor(const StateDict& d, const std::string& key, const std::string& where);
std::vector<c10::IValue> state_list(const StateDict& d, const std::string& key, const std::string& where);
bool state_has(const StateDict& d, const std::string& key);

// A scalar of a loaded state (Python float or int, or a 0-d tensor such as Adam's "step").
double ivalue_to_double(const c10::IValue& v, const std::string& where);

}  // namespace crosstrain::core
