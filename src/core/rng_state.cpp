#include "core/rng_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>

#include <mutex>
#include <stdexcept>

namespace crosstrain::core {

namespace {

at::Generator cpu_generator() { return at::detail::getDefaultCPUGenerator(); }

// The device's default generator, or an undefined one when the device has none (the CPU itself,
// or a backend without a generator).
at::Generator device_generator(c10::Device device) {
  if (device.is_cpu()) return {};
  try {
    return at::globalContext().defaultGenerator(device);
  } catch (const std::exception&) {
    return {};
  }
}

at::Tensor get_state(at::Generator& gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_state(at::Generator& gen, const at::Tensor& state, const std::string& what) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  try {
    gen.set_state(state.to(at::kCPU).contiguous());
  } catch (const std::exception& e) {
    std::string msg = e.what();
    throw std::invalid_argument("rng state: the " + what + " generator rejected the saved state: " +
                                msg.substr(0, msg.find('\n')));
  }
}

}  // namespace

StateDict rng_state_dict(c10::Device device) {
  StateDict d = make_state_dict();
  auto cpu = cpu_generator();
  d.insert("cpu", get_state(cpu));
  auto dev = device_generator(device);
  d.insert("device_type", c10::DeviceTypeName(device.type(), /*lower_case=*/true));
  if (dev.defined()) d.insert("device", get_state(dev));
  else d.insert("device", c10::IValue());
  return d;
}

void load_rng_state_dict(const StateDict& d, c10::Device device) {
  const std::string where = "rng state";
  auto cpu = cpu_generator();
  set_state(cpu, state_tensor(d, "cpu", where), "CPU");
  const auto& saved = state_value(d, "device", where);
  if (saved.isNone()) return;
  const std::string type = state_string(d, "device_type", where);
  const std::string here = c10::DeviceTypeName(device.type(), /*lower_case=*/true);
  if (type != here)
    throw std::invalid_argument(where + ": saved on a " + type + " device, this run trains on " + here);
  auto dev = device_generator(device);
  if (!dev.defined()) throw std::invalid_argument(where + ": the " + here + " backend has no generator to restore");
  set_state(dev, saved.toTensor(), here);
}

}  // namespace crosstrain::core
