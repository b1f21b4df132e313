// The advisor's rules about the script (advisor_script_rules.cpp): for each, a trace with the call
// sites `crosstrain run --profile` writes that triggers it, and a near twin that must not (a
// machine's hiccup, a read inside torch, a loop of big calls, workers kept, pinned memory).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "kineto_trace_writer.h"
#include "test_support.h"
#include "tools/analyze/advisor.h"
#include "tools/analyze/trace_reader.h"

namespace fs = std::filesystem;
using namespace crosstrain::analyze;
using crosstrain::analyze::testing::KinetoTraceWriter;

namespace {

constexpr long long kBase = 5'000'000'000'000LL;

// A trace and its call sites, written side by side: python() records a call made from train.py's
// line `line`, loader() a DataLoader the script built.
class Script {
 public:
  Script() { w.base_time_ns(kBase); }
  KinetoTraceWriter w;
  // File 0 is the user's train.py, file 1 a library's (timm/layers/mlp.py).
  Script& python(const std::string& name, double ts, double dur, int line, int file = 0) {
    w.python(name, ts, dur);
    if (line > 0)
      calls_ += (calls_.empty() ? "" : ", ") + std::string("[") + std::to_string(kBase + static_cast<long long>(ts * 1000)) +
                ", " + std::to_string(file) + ", " + std::to_string(line) + ", \"train\"]";
    return *this;
  }
  Script& loader(int workers, bool pinned, bool persistent) {
    loaders_ += std::string(loaders_.empty() ? "" : ", ") + "{\"num_workers\": " + std::to_string(workers) +
                ", \"pin_memory\": " + (pinned ? "true" : "false") + ", \"persistent_workers\": " +
                (persistent ? "true" : "false") + ", \"prefetch_factor\": " + (workers ? "2" : "null") +
                ", \"batch_size\": 8, \"dataset\": \"ImageFolder\", \"iterators\": 1, \"made_at\": {\"file\": "
                "\"train.py\", \"line\": 20, \"text\": \"loader = DataLoader(...)\"}}";
    return *this;
  }
  std::set<std::string> rules() {
    const auto dir = crosstrain::testing::scratch_dir("script_rules");
    std::ofstream(dir / "rank0.pt.trace.json") << w.json();
    std::ofstream(dir / "rank0.pt.trace.sources.json")
        << "{\"format\": \"crosstrain-call-sites\", \"version\": 1, \"cpus\": 8, \"files\": [[\"train.py\", \"user\"], [\"timm/layers/mlp.py\", \"library\"]], "
           "\"calls\": [" << calls_ << "], \"dataloaders\": [" << loaders_ << "]}";
    auto a = analyze_trace(read_traces(dir.string()).at(0));
    a.findings = run_advisor(a);
    std::set<std::string> out;
    for (const auto& f : a.findings) out.insert(f.rule);
    last = a;
    return out;
  }
  TraceAnalysis last;

 private:
  std::string calls_, loaders_;
};

// Steps of `step_us` on the CPU, each with a batch wait of waits[k] from the loop's line 30.
Script loader_steps(const std::vector<double>& waits, const std::string& iterator, double step_us = 10000) {
  Script s;
  for (size_t k = 0; k < waits.size(); ++k) {
    const double t0 = static_cast<double>(k) * step_us;
    s.w.step("ProfilerStep#" + std::to_string(k), t0, step_us);
    s.python("torch/utils/data/dataloader.py(700): __next__", t0 + 1, waits[k] + 2, 30);
    s.w.annotation("enumerate(DataLoader)#" + iterator + ".__next__", t0 + 2, waits[k]);
    s.w.op("aten::mm", t0 + waits[k] + 10, step_us - waits[k] - 20);
  }
  return s;
}

bool fires(Script s, const std::string& rule) { return s.rules().count(rule) == 1; }

}  // namespace

TEST(ScriptRules, TheTableHoldsTheScriptRules) {
  std::set<std::string> ids;
  for (const auto& r : advisor_rules()) ids.insert(r.id);
  for (auto id : {"host_read", "python_op_loop", "dataloader_workers", "dataloader_prefetch",
                  "dataloader_persistent_workers", "dataloader_pin_memory"})
    EXPECT_EQ(ids.count(id), 1u) << id;
}

TEST(ScriptRules, WorkersJudgedOnTheMedianStepNotAHiccup) {
  const std::string single = "_SingleProcessDataLoaderIter";
  EXPECT_TRUE(fires(loader_steps({1500, 1400, 1600}, single).loader(0, false, false), "dataloader_workers"));
  // One step of three waited 16% (the machine paused the process): not the loader's doing.
  EXPECT_FALSE(fires(loader_steps({100, 1600, 120}, single).loader(0, false, false), "dataloader_workers"));
  // Without the script's DataLoaders the generic rule judges the mean, as before.
  auto plain = loader_steps({1500, 1400, 1600}, single);
  auto found = plain.rules();
  EXPECT_EQ(found.count("data_loading"), 1u);
  EXPECT_EQ(found.count("dataloader_workers"), 0u);
  // With them, the generic rule leaves the judgement to the DataLoader rules.
  EXPECT_EQ(loader_steps({1500, 1400, 1600}, single).loader(0, false, false).rules().count("data_loading"), 0u);
}

TEST(ScriptRules, WorkerBurstsNeedTwoOfFiveSteps) {
  const std::string multi = "_MultiProcessingDataLoaderIter";
  auto two = loader_steps({50, 3000, 40, 2500, 60, 50}, multi).loader(2, false, true);
  EXPECT_EQ(two.rules(), std::set<std::string>{"dataloader_prefetch"});
  EXPECT_FALSE(fires(loader_steps({50, 3000, 40, 60, 60, 50}, multi).loader(2, false, true), "dataloader_prefetch"));
  EXPECT_FALSE(fires(loader_steps({50, 3000, 2500}, multi).loader(2, false, true), "dataloader_prefetch"));  // 3 steps
}

TEST(ScriptRules, WorkersStartedInsideTheStepsWithoutPersistentWorkers) {
  auto restart = [](bool persistent) {
    Script s;
    for (int k = 0; k < 3; ++k) {
      const double t0 = k * 10000.0;
      s.w.step("ProfilerStep#" + std::to_string(k), t0, 10000).op("aten::mm", t0 + 3000, 6000);
      if (k == 1) {  // an epoch begins: the iterator starts its workers, the first batch waits for them
        s.w.annotation("DataLoader.__iter__ (num_workers=2, persistent_workers=False)", t0 + 1, 800);
        s.python("torch/utils/data/dataloader.py(700): __next__", t0 + 850, 1600, 30);
        s.w.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", t0 + 900, 1500);
      } else {
        s.python("torch/utils/data/dataloader.py(700): __next__", t0 + 1, 60, 30);
        s.w.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", t0 + 2, 50);
      }
    }
    return s.loader(2, false, persistent);
  };
  EXPECT_EQ(restart(false).rules(), std::set<std::string>{"dataloader_persistent_workers"});
  EXPECT_TRUE(restart(true).rules().empty());
}

TEST(ScriptRules, PageableCopiesOfAnUnpinnedLoader) {
  auto copies = [](bool pinned) {
    Script s;
    s.w.compute_major(8).step("ProfilerStep#1", 0, 1000);
    s.python("<built-in method to of Tensor object at 0x1>", 10, 100, 31);
    s.w.op("aten::copy_", 12, 95).launch(15, 5, "Memcpy HtoD (Pageable -> Device)", 30, 60, "gpu_memcpy");
    s.w.op("aten::mm", 200, 50).launch(205, 5, "gemm", 260, 700);
    return s.loader(2, pinned, true);
  };
  EXPECT_TRUE(fires(copies(false), "dataloader_pin_memory"));
  EXPECT_FALSE(fires(copies(true), "dataloader_pin_memory"));
}

TEST(ScriptRules, HostReadsFromTheUsersLinesEveryStep) {
  auto reads = [](int every, int line, int file = 0) {
    Script s;
    for (int k = 0; k < 3; ++k) {
      const double t0 = k * 1000.0;
      s.w.step("ProfilerStep#" + std::to_string(k), t0, 1000);
      s.python("nn.Module: Net_0", t0 + 5, 710, 80).w.op("aten::mm", t0 + 10, 700);
      if (k % every == 0)
        s.python("<built-in method item of Tensor object at 0x1>", t0 + 800, 20, line, file).w.op("aten::item", t0 + 802, 15);
    }
    return s;
  };
  EXPECT_TRUE(fires(reads(1, 84), "host_read"));
  EXPECT_FALSE(fires(reads(3, 84), "host_read"));  // one read in three steps
  EXPECT_FALSE(fires(reads(1, 0), "host_read"));   // reads made inside torch (not from a line of the user's)
  EXPECT_FALSE(fires(reads(1, 48, 1), "host_read"));  // ... or inside a library
  auto s = reads(1, 84);
  s.rules();
  ASSERT_EQ(s.last.findings.size(), 1u);
  ASSERT_EQ(s.last.findings[0].sources.size(), 1u);
  EXPECT_EQ(s.last.findings[0].sources[0].where, "train.py:84");
}

TEST(ScriptRules, ALoopOfSmallCallsNotALoopOfBlocks) {
  auto loop = [](int ops_per_call) {
    Script s;
    s.w.step("ProfilerStep#0", 0, 10000);
    for (int i = 0; i < 40; ++i) {
      const double t0 = 100 + i * 200.0;
      s.python("<built-in method mul_ of Tensor object at 0x1>", t0, 150, 32);
      for (int o = 0; o < ops_per_call; ++o) s.w.op("aten::mul_", t0 + 1 + o * 14, 12);
    }
    return s;
  };
  EXPECT_TRUE(fires(loop(1), "python_op_loop"));
  EXPECT_FALSE(fires(loop(10), "python_op_loop"));  // each call a block of work: not tiny operators
}

namespace {

// One step of a model with `instances` RMSNorm modules, each called once from its decoder layer's
// forward at line 60; each forward (its frame opened by torch's module call) calls torch.rsqrt `per_call` times
// from its line 42, one 3 us operator each.
Script norms(int instances, int per_call) {
  Script s;
  const double call_us = 10, forward_us = per_call * call_us + 4;
  s.w.step("ProfilerStep#0", 0, instances * (forward_us + 6) + 100);
  for (int m = 0; m < instances; ++m) {
    const double t0 = 50 + m * (forward_us + 6);
    s.python("model.py(55): forward", t0 - 1, forward_us + 6, 0);  // the decoder layer's
    s.python("nn.Module: RMSNorm_" + std::to_string(m), t0, forward_us + 4, 60);
    s.python("model.py(40): forward", t0 + 1, forward_us + 2, 0);
    for (int c = 0; c < per_call; ++c) {
      const double at = t0 + 2 + c * call_us;
      s.python("<built-in method rsqrt of type object at 0x7f" + std::to_string(m * 100 + c) + ">", at, call_us - 2, 42);
      s.w.op("aten::rsqrt", at + 1, 3);
    }
  }
  return s;
}

}  // namespace

// One line of a module's forward run once by each of 232 instances is the model's depth, not a
// loop; the same line calling rsqrt 232 times in one forward is, and so are 4 calls in each of 58
// instances (a loop over heads, say).
TEST(ScriptRules, ManyInstancesOfOneModuleAreNotAPythonLoop) {
  auto instances = norms(232, 1);
  EXPECT_FALSE(instances.rules().count("python_op_loop"));
  // Still among the lines called most often, and no loop.
  const auto& called = instances.last.call_loops;
  auto line42 = std::find_if(called.begin(), called.end(), [](const SourceLine& l) { return l.where == "train.py:42"; });
  ASSERT_NE(line42, called.end());
  EXPECT_EQ(line42->count, 232);
  EXPECT_EQ(line42->repeats, 1);
  EXPECT_TRUE(instances.last.op_loops.empty());

  auto loop = norms(1, 232);
  EXPECT_TRUE(loop.rules().count("python_op_loop"));
  ASSERT_FALSE(loop.last.op_loops.empty());
  EXPECT_EQ(loop.last.op_loops.front().where, "train.py:42");
  EXPECT_EQ(loop.last.op_loops.front().repeats, 232);
  EXPECT_TRUE(fires(norms(58, 4), "python_op_loop"));
  EXPECT_FALSE(fires(norms(116, 2), "python_op_loop"));  // `f(x) * f(y)` on one line: two calls, no loop
}

// Only operators that are small for this trace count: a loop over 4.7 s convolutions is no loop
// of small operators, however many calls it makes; the same loop over 3 us operators is.
TEST(ScriptRules, ALoopOfLongOperatorsIsNotALoopOfSmallOnes) {
  auto loop = [](double op_us) {
    Script s;
    const double call_us = op_us + 10;
    s.w.step("ProfilerStep#0", 0, 40 * call_us + 2000);
    for (int i = 0; i < 100; ++i) s.w.op("aten::view", 5 + 15 * i, 2);  // the trace's cheapest operators
    for (int i = 0; i < 40; ++i) {
      const double at = 1600 + i * call_us;
      s.python("nn.Module: Conv2d_" + std::to_string(i), at, call_us - 2, 33);
      s.w.op("aten::conv2d", at + 1, op_us);
    }
    return s;
  };
  auto big = loop(4.7e6);
  EXPECT_FALSE(big.rules().count("python_op_loop"));
  EXPECT_DOUBLE_EQ(big.last.op_overhead_us, 2);
  EXPECT_DOUBLE_EQ(big.last.small_op_us, 20);
  ASSERT_FALSE(big.last.op_loops.empty());
  EXPECT_EQ(big.last.op_loops.front().ops, 40);
  EXPECT_EQ(big.last.op_loops.front().small_ops, 0);

  auto small = loop(3);
  EXPECT_TRUE(small.rules().count("python_op_loop"));
  for (const auto& f : small.last.findings)
    if (f.rule == "python_op_loop") {
      EXPECT_NE(f.evidence.find("40 small operators per step (of 40)"), std::string::npos) << f.evidence;
      EXPECT_NE(f.evidence.find("small: at most 20.0 us each, 10x this trace's per-operator cost of 2.0 us"),
                std::string::npos)
          << f.evidence;
    }
}
