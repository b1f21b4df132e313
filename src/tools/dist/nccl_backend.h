#pragma once
// c10d's NCCL process group for CUDA devices, in a translation unit of its own: only it needs
// nccl.h (from the wheel's nvidia-nccl package) and the CUDA headers. Built when both are found
// (CROSSTRAIN_WITH_NCCL); otherwise make_nccl_backend says so.
#include <chrono>

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Backend;
class Store;
}  // namespace c10d

namespace crosstrain::dist {

// NCCL keeps asynchronous error handling on (TORCH_NCCL_ASYNC_ERROR_HANDLING, torch's default): a
// collective that fails or passes `timeout` aborts the communicator instead of hanging.
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    std::chrono::milliseconds timeout);
bool nccl_available();

}  // namespace crosstrain::dist
