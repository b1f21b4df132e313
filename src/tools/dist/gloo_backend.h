#pragma once
// c10d's Gloo process group, in a translation unit of its own: ProcessGroupGloo.hpp includes gloo's
// headers, which the torch wheel lacks (Debian's libgloo-dev provides them; only declarations are
// used, all gloo code is in libtorch_cpu). Built when they are found (CROSSTRAIN_WITH_GLOO);
// otherwise make_gloo_backend says so, and the rest of crosstrain builds and runs.
#include <chrono>

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Backend;
class Store;
}  // namespace c10d

namespace crosstrain::dist {

// GLOO_SOCKET_IFNAME (comma-separated interfaces) picks the network, else the host name's address.
c10::intrusive_ptr<c10d::Backend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    std::chrono::milliseconds timeout);
bool gloo_available();

}  // namespace crosstrain::dist
