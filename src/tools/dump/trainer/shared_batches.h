#pragma once
// Batches that two runs can share exactly, whatever device each trains on: read from .npy files,
// or generated on the host from the seed and copied to the device (device RNGs differ, host
// generation does not).
#include <memory>
#include <string>

#include "core/batch_source.h"

namespace crosstrain::dump {

// DIR/images.npy (float32, N x C x H x W) and DIR/labels.npy (int64, N), one batch returned on
// every step. std::runtime_error naming the file when one is missing or malformed.
std::unique_ptr<core::BatchSource> make_npy_batch_source(const std::string& dir, const std::string& device,
                                                         int64_t num_classes, bool channels_last);

// make_synthetic_source's batches, generated on the CPU and copied to `device`.
std::unique_ptr<core::BatchSource> make_host_synthetic_source(const core::SyntheticOptions& options,
                                                              const std::string& device);

}  // namespace crosstrain::dump
