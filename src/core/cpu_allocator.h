#pragma once
// The CPU allocator crosstrain installs in front of libtorch's, for memory statistics and fewer
// page faults; DeviceContext::memory() reads its counters on the CPU.
#include <cstdint>

namespace crosstrain::core {

// CPU memory held by tensors, counted by a tracking allocator installed in front of libtorch's
// CPU allocator. install_cpu_memory_tracking() is idempotent and cheap (two atomics per call).
//
// Blocks of 256 KiB and more come from mmap() in size classes (four per power of two) and, when
// freed, are kept for the next allocation of that class, up to a quarter of the machine's memory;
// smaller ones come from malloc. A training step reuses the same sizes every iteration, so its
// activations stop costing page faults, and small allocations made meanwhile (a profiler's
// records) cannot fragment them. set_cpu_block_caching(false) sends everything to malloc (blocks
// already cached stay usable); cpu_release_cached_blocks() returns the free ones to the system.
void install_cpu_memory_tracking();
void set_cpu_block_caching(bool enabled);
int64_t cpu_tensor_bytes_current();
int64_t cpu_tensor_bytes_peak();
void cpu_tensor_bytes_reset_peak();
int64_t cpu_block_bytes_reserved();  // size-class blocks in use or free, plus live small ones
int64_t cpu_cached_block_bytes();    // free blocks kept for reuse
void cpu_release_cached_blocks();

// Peak resident set size of this process (getrusage), bytes.
int64_t process_peak_rss_bytes();

}  // namespace crosstrain::core
