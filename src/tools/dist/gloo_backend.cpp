#include "tools/dist/gloo_backend.h"

#include <stdexcept>

#ifdef CROSSTRAIN_WITH_GLOO
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

namespace crosstrain::dist {

#ifdef CROSSTRAIN_WITH_GLOO
bool gloo_available() { return true; }

c10::intrusive_ptr<c10d::Backend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create_default(timeout);
  return c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>("gloo/", store), rank, size,
                                                     options);
}
#else
bool gloo_available() { return false; }

c10::intrusive_ptr<c10d::Backend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                                    std::chrono::milliseconds) {
  throw std::runtime_error("this build of crosstrain has no Gloo process group (gloo's headers, Debian's libgloo-dev, "
                           "were not found at build time)");
}
#endif

}  // namespace crosstrain::dist
