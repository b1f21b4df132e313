#pragma once
// The tiny run the trainer tests share: small-stem ResNet-18 on 16 px synthetic images, CPU, one
// thread (deterministic), no progress line.
#include "tools/train/train_config.h"

namespace crosstrain::testing {

inline train::TrainConfig tiny_train_config(int64_t batch_size, int64_t steps, int64_t warmup_steps) {
  train::TrainConfig c;
  c.device = "cpu";
  c.model = "resnet18";
  c.small_stem = true;
  c.num_classes = 10;
  c.image_size = 16;
  c.batch_size = batch_size;
  c.steps = steps;
  c.warmup_steps = warmup_steps;
  c.threads = 1;
  c.lr = 0.01;
  c.progress = false;
  return c;
}

}  // namespace crosstrain::testing
