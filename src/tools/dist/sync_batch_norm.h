#pragma once
// Synchronised BatchNorm (--sync-bn): in training, each BatchNorm layer normalises with the mean
// and variance of the whole global batch, all ranks together, as torch.nn.SyncBatchNorm does; its
// backward all-reduces the two sums the input gradient needs. Weight and bias gradients stay local
// (the gradient exchange averages them). In evaluation the layer's own forward runs (running
// statistics). On N ranks with per-rank batch b a step equals one process with batch N x b.
//
//   model->set_batch_norm(dist::sync_batch_norm(group));
#include "core/models.h"
#include "tools/dist/group.h"

namespace crosstrain::dist {

core::BatchNormFn sync_batch_norm(Group& group);

}  // namespace crosstrain::dist
