// Traces as they arrive from the field: torch 1.8-1.10 Kineto categories, a device type no table
// lists, an Ascend PyTorch Profiler output folder, and real torch.profiler recordings with a
// multi-worker DataLoader and with_stack (tests/data/traces/make_torch_variants.py).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tools/analyze/advisor.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/rank_compare.h"
#include "tools/analyze/trace_diff.h"
#include "tools/analyze/trace_reader.h"

using namespace crosstrain::analyze;

namespace {

const std::string kData = std::string(CROSSTRAIN_SOURCE_DIR) + "/tests/data/traces/";

TraceAnalysis analyzed(const Trace& t) {
  auto a = analyze_trace(t);
  a.findings = run_advisor(a);
  return a;
}
TraceAnalysis analyze_file(const std::string& name) { return analyzed(read_trace_file(kData + name)); }

const OperatorStats* op(const TraceAnalysis& a, const std::string& name) {
  for (const auto& o : a.operators)
    if (o.name == name) return &o;
  return nullptr;
}
double cat(const StepBreakdown& s, StepCategory c) { return s.category_us[static_cast<size_t>(c)]; }
const Finding* finding(const TraceAnalysis& a, const std::string& rule) {
  for (const auto& f : a.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

}  // namespace

// Two 900 us steps; per step: data loading [0,200], conv kernel [300,600], pageable DtoH copy
// [620,720], memset [730,735].
TEST(OldKinetoGeneration, CapitalisedCategoriesAreRead) {
  auto a = analyze_file("kineto_old_generation.json");
  EXPECT_TRUE(a.unrecognised().empty());
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_TRUE(a.has_device);
  const auto& s = a.steps[0];
  EXPECT_DOUBLE_EQ(s.duration_us, 900);
  EXPECT_DOUBLE_EQ(cat(s, StepCategory::Kernel), 300);
  EXPECT_DOUBLE_EQ(cat(s, StepCategory::Memcpy), 100);
  EXPECT_DOUBLE_EQ(cat(s, StepCategory::Memset), 5);
  EXPECT_DOUBLE_EQ(cat(s, StepCategory::DataLoading), 200);  // enumerate(DataLoader)# as "Operator"
  ASSERT_NE(op(a, "aten::conv2d"), nullptr);
  EXPECT_DOUBLE_EQ(op(a, "aten::conv2d")->device_self_us, 600);
  auto by_shape = analyze_trace(read_trace_file(kData + "kineto_old_generation.json"), AnalyzeOptions{true});
  ASSERT_NE(op(by_shape, "aten::conv2d"), nullptr);
  EXPECT_EQ(op(by_shape, "aten::conv2d")->shapes, "[[8,3,32,32]]");  // read from "Input dims"
  EXPECT_EQ(op(a, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"), nullptr);
  EXPECT_EQ(op(a, "ProfilerStep#1"), nullptr);
  EXPECT_DOUBLE_EQ(a.pageable_copy_us, 200);
  const Finding* f = finding(a, "pageable_copy");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("Memcpy DtoH (Device -> Pageable) x2"), std::string::npos) << f->evidence;
  EXPECT_NE(finding(a, "data_loading"), nullptr);
}

TEST(OldKinetoGeneration, DiffSeesTheFasterRun) {
  auto a = analyze_file("kineto_old_generation.json");
  auto b = analyze_file("kineto_old_generation_faster.json");
  auto d = diff_analyses(a, b);
  EXPECT_TRUE(d.per_step);
  EXPECT_TRUE(d.warning.empty());
  bool kernel_faster = false;
  for (const auto& r : d.rows)
    if (r.kind == "category" && r.name == "kernel") kernel_faster = r.status == DiffStatus::Faster && r.b_us == 150;
  EXPECT_TRUE(kernel_faster);
}

TEST(Recognition, NothingRecognisedIsNotAResult) {
  auto t = parse_trace(R"({"traceEvents": [
      {"ph": "X", "cat": "Widget", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
      {"ph": "X", "cat": "Widget", "name": "b", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]})", "w.json");
  auto a = analyze_trace(t);
  EXPECT_EQ(a.recognised_spans, 0u);
  std::string why = a.unrecognised();
  EXPECT_NE(why.find("w.json: nothing in this trace was recognised"), std::string::npos) << why;
  EXPECT_NE(why.find("Widget"), std::string::npos) << why;
  EXPECT_TRUE(analyze_file("kineto_gpu_hand.json").unrecognised().empty());
}

// MTIA-shaped: "mtia_runtime" + "mtia_ccp_events" linked by correlation; a made-up vendor whose
// work is linked to its launch only by a flow.
TEST(ThirdVendor, DeviceFoundByStructure) {
  auto a = analyze_file("third_vendor.json");
  EXPECT_TRUE(a.has_device);
  EXPECT_EQ(a.kernel_count, 2);
  EXPECT_DOUBLE_EQ(a.kernel_us, 800);
  ASSERT_NE(op(a, "aten::mm"), nullptr);
  EXPECT_DOUBLE_EQ(op(a, "aten::mm")->device_self_us, 600);
  ASSERT_NE(op(a, "aten::relu"), nullptr);
  EXPECT_DOUBLE_EQ(op(a, "aten::relu")->device_self_us, 200);
  EXPECT_DOUBLE_EQ(a.total.device_busy_us, 800);
  EXPECT_TRUE(a.cpu_fallback.empty());
}

TEST(ThirdVendor, UnknownCategoryOnTheHostStaysHost) {
  // Same unknown category, but nothing links it to host work: not promoted to device activity.
  auto t = parse_trace(R"({"traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 5, "tid": 5, "ts": 0, "dur": 100},
      {"ph": "X", "cat": "acme_exec", "name": "task", "pid": 9, "tid": 1, "ts": 10, "dur": 50}]})", "t.json");
  EXPECT_FALSE(analyze_trace(t).has_device);
}

TEST(AscendFolder, ReadsAscendProfilerOutputAndSkipsNonTraces) {
  std::vector<std::string> notes;
  auto traces = read_traces(kData + "ascend_pt/node0_1001_20240101_ascend_pt", {}, &notes);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_NE(traces[0].path.find("ASCEND_PROFILER_OUTPUT/trace_view.json"), std::string::npos);
  // communication.json and communication_matrix.json are the profiler's summaries (ascend_output
  // reads them), not traces: nothing to skip.
  EXPECT_TRUE(notes.empty()) << notes.front();
  auto cluster = read_traces(kData + "ascend_pt", {}, nullptr);
  ASSERT_EQ(cluster.size(), 2u);
  EXPECT_EQ(cluster[0].rank, 0);  // from profiler_info_<rank>.json next to ASCEND_PROFILER_OUTPUT/
  EXPECT_EQ(cluster[1].rank, 1);
  EXPECT_NE(cluster[1].path.find("node0_1002"), std::string::npos);
}

// trace_view.json: four operators whose CANN calls run on the task queue's thread, linked to their
// NPU tasks by async_npu flows; NonZero is an AI_CPU task after a 400 us online compile.
TEST(AscendFolder, AsyncNpuFlowsAttributeEveryTask) {
  auto traces = read_traces(kData + "ascend_pt/node0_1001_20240101_ascend_pt");
  auto a = analyzed(traces[0]);
  EXPECT_EQ(a.format, "ascend");
  double attributed = 0;
  for (const auto& o : a.operators) attributed += o.device_self_us;
  EXPECT_DOUBLE_EQ(attributed, 500);  // every NPU compute task
  EXPECT_DOUBLE_EQ(op(a, "aten::mm")->device_self_us, 200);
  EXPECT_EQ(op(a, "aten::mm")->type, OpType::Matmul);
  EXPECT_DOUBLE_EQ(op(a, "aten::relu")->device_self_us, 30);
  EXPECT_TRUE(a.cpu_fallback.empty());
  EXPECT_EQ(finding(a, "cpu_fallback"), nullptr);
  EXPECT_EQ(a.launches, 4);  // HostToDevice flows keep the CANN call as the launch
  // Online compilation charged to the operator that caused it, AI_CPU tasks on their own.
  ASSERT_EQ(a.online_compile.size(), 1u);
  EXPECT_EQ(a.online_compile[0].name, "aten::nonzero");
  EXPECT_DOUBLE_EQ(a.online_compile_us, 400);
  ASSERT_EQ(a.ai_cpu_tasks.size(), 1u);
  EXPECT_EQ(a.ai_cpu_tasks[0].name, "NonZero");
  EXPECT_DOUBLE_EQ(a.ai_cpu_us, 250);
  EXPECT_NE(finding(a, "online_compile"), nullptr);
  EXPECT_NE(finding(a, "ai_cpu_fallback"), nullptr);
  // Idle from the step start and from the first NPU task (400 us in): busy 700 of 1400 / 1100.
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(a.steps[0].duration_us, 1400);
  EXPECT_DOUBLE_EQ(a.steps[0].device_busy_us, 700);
  EXPECT_DOUBLE_EQ(a.steps[0].device_window_us, 1100);
}

TEST(AscendNames, OperatorsAndTasksClassified) {
  EXPECT_EQ(op_type_of("aclnnMm"), OpType::Matmul);
  EXPECT_EQ(op_type_of("AscendCL@aclnnMm"), OpType::Matmul);
  EXPECT_EQ(op_type_of("aclnnBatchMatMul"), OpType::Matmul);
  EXPECT_EQ(op_type_of("MatMulV2"), OpType::Matmul);
  EXPECT_TRUE(is_online_compile_name("AscendCL@aclopCompileAndExecute"));
  EXPECT_FALSE(is_online_compile_name("AscendCL@aclnnMm"));
}

// Names from public traces (HolisticTraceAnalysis's test traces: torchrec on A100, MTIA, MI250;
// and torch's own operator list) typed by what they compute, not by a piece of another word: a
// namespace is no type (fbgemm is not a GEMM, fb:: not a convolution), normal_ draws random
// numbers, topk is no copy, torchrec's All2All_* are collectives.
TEST(OperatorNames, TypedByWhatTheyComputeNotByPiecesOfWords) {
  const std::pair<const char*, OpType> cases[] = {
      {"fbgemm::permute_2D_sparse_data", OpType::Other},
      {"fbgemm::asynchronous_complete_cumsum", OpType::Other},
      {"fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function", OpType::Other},
      {"void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int, int const*, int const*, int*)", OpType::Other},
      {"fb::convex_sum", OpType::Elementwise},  // a sum, not a convolution
      {"aten::normal_", OpType::Other},
      {"aten::_no_grad_normal_", OpType::Other},
      {"aten::topk", OpType::Other},
      {"aten::_convert_indices_from_coo_to_csr", OpType::Other},
      {"All2All_Pooled_Req", OpType::Communication},
      {"All2All_Pooled_Wait", OpType::Communication},
      {"aten::resolve_neg", OpType::Copy},
      {"aten::resolve_conj", OpType::Copy},
      {"aten::to", OpType::Copy},
      {"aten::to_dense", OpType::Copy},
      {"aten::_to_copy", OpType::Copy},
      // What must keep its type.
      {"aten::mm", OpType::Matmul},
      {"aten::addmm", OpType::Matmul},
      {"aten::linear", OpType::Matmul},
      {"quantized::linear", OpType::Matmul},
      {"aten::fbgemm_linear_fp16_weight", OpType::Matmul},
      {"ampere_sgemm_128x64_tn", OpType::Matmul},
      {"volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", OpType::Matmul},
      {"aten::conv2d", OpType::Conv},
      {"aten::cudnn_convolution", OpType::Conv},
      {"aten::convolution_backward", OpType::Conv},
      {"aclnnConvolution", OpType::Conv},
      {"Conv2D", OpType::Conv},
      {"implicit_convolve_sgemm", OpType::Conv},
      {"sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc", OpType::Conv},
      {"aten::batch_norm", OpType::Norm},
      {"aten::native_layer_norm", OpType::Norm},
      {"aclnnLayerNorm", OpType::Norm},
      {"RmsNorm", OpType::Norm},
      {"BatchNormalization", OpType::Norm},
      {"aten::linalg_vector_norm", OpType::Norm},
      {"aten::max_pool2d", OpType::Pooling},
      {"aten::exp", OpType::Elementwise},
      {"aten::copy_", OpType::Copy},
      {"c10d::allreduce_", OpType::Communication},
  };
  for (const auto& [name, type] : cases) EXPECT_EQ(op_type_of(name), type) << name << ": " << op_type_name(op_type_of(name));
}

// Real torch.profiler recordings (CPU): a DataLoader with two workers and slow samples; with_stack
// and loss.item() in every step.
TEST(RealTorchTraces, DataLoaderWithWorkers) {
  auto a = analyze_file("torch_cpu_dataloader.json.gz");
  ASSERT_EQ(a.steps.size(), 4u);
  EXPECT_FALSE(a.has_device);
  EXPECT_GT(a.total.data_wait_us, 0.05 * a.total.duration_us);
  EXPECT_NE(finding(a, "data_loading"), nullptr);
  for (const char* device_rule : {"comm_overlap", "fp32_matmul", "small_batch", "host_sync", "device_idle",
                                  "cpu_fallback", "pageable_copy", "launch_delay"})
    EXPECT_EQ(finding(a, device_rule), nullptr) << device_rule;
}

TEST(RealTorchTraces, WithStackAndItem) {
  auto t = read_trace_file(kData + "torch_cpu_stack.json.gz");
  size_t python = 0;
  for (const auto& s : t.spans) python += s.kind == SpanKind::PythonFunction;
  EXPECT_GT(python, 0u);
  auto a = analyzed(t);
  ASSERT_EQ(a.steps.size(), 4u);
  EXPECT_GE(a.host_sync_count, 4);  // loss.item() each step, counted ...
  EXPECT_EQ(finding(a, "host_sync"), nullptr);  // ... but a CPU run has no device to wait for
  ASSERT_NE(op(a, "aten::convolution"), nullptr);
}

TEST(Timeline, MedianStepRowsAndBars) {
  auto a = analyze_file("kineto_old_generation.json");
  EXPECT_FALSE(a.timeline.step.empty());
  EXPECT_DOUBLE_EQ(a.timeline.duration_us, 900);
  bool host = false, device = false;
  for (const auto& r : a.timeline.rows) {
    host = host || r.label.rfind("host ", 0) == 0;
    if (r.label.rfind("device ", 0) == 0) {
      device = true;
      for (const auto& b : r.bars) {
        EXPECT_GE(b.start_us, 0);
        EXPECT_LE(b.start_us + b.duration_us, 900 + 1e-9);
      }
    }
  }
  EXPECT_TRUE(host);
  EXPECT_TRUE(device);
}

TEST(AscendNames, EventWaitTasksAreNotDeviceWork) {
  auto t = parse_trace(R"([
    {"name": "process_name", "ph": "M", "pid": 4000, "tid": 0, "args": {"name": "Ascend Hardware"}},
    {"name": "MatMulV2", "ph": "X", "pid": 4000, "tid": 7, "ts": "10.000", "dur": 20, "args": {"Task Type": "AI_CORE"}},
    {"name": "EVENT_WAIT", "ph": "X", "pid": 4000, "tid": 7, "ts": "30.000", "dur": 500, "args": {"Task Type": "EVENT_WAIT"}},
    {"name": "MEMCPY_ASYNC", "ph": "X", "pid": 4000, "tid": 7, "ts": "600.000", "dur": 5, "args": {"Task Type": "MEMCPY_ASYNC"}}])",
                       "hw.json");
  auto a = analyze_trace(t);
  EXPECT_EQ(a.format, "ascend");
  EXPECT_DOUBLE_EQ(a.total.device_busy_us, 25);  // the 500 us wait is not busy time
  EXPECT_DOUBLE_EQ(a.total.category_us[static_cast<size_t>(StepCategory::Memcpy)], 5);
}

// Real per-rank torch.profiler traces of a 2-process DDP job (Gloo, CPU; make_ddp_traces.py). In
// the straggler job rank 1 runs two extra forwards per step; rank 0 waits for it in the all-reduce.
namespace {
std::vector<TraceAnalysis> ddp_job(const std::string& name) {
  std::vector<TraceAnalysis> out;
  for (const auto& t : read_traces(kData + "ddp/" + name)) out.push_back(analyzed(t));
  return out;
}
}  // namespace

TEST(RankFindings, AStragglerIsNamedWithTheOtherRanksWait) {
  const auto job = ddp_job("straggler");
  ASSERT_EQ(job.size(), 2u);
  EXPECT_EQ(job[0].rank, 0);
  EXPECT_EQ(job[1].rank, 1);
  const auto f = rank_findings(job);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, "straggler");
  EXPECT_EQ(f[0].title, "Rank 1 is a straggler");
  EXPECT_GT(f[0].value, 1.3);  // three forwards and one backward against one and one
  EXPECT_NEAR(f[0].value, compute_us_per_step(job[1]) / compute_us_per_step(job[0]), 1e-9);
  // More work, not slower work: the forward operators ran three times as often.
  EXPECT_TRUE(std::regex_search(f[0].evidence, std::regex(R"(\((aten::\w+): 36 calls against 12\))"))) << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("the ranks did not do the same work"), std::string::npos) << f[0].evidence;
  // Rank 0's communication is its wait: it exceeds rank 1's by most of the compute difference.
  const double wait = cat(job[0].total, StepCategory::Communication) / 6 - cat(job[1].total, StepCategory::Communication) / 6;
  EXPECT_GT(wait, 0.5 * (compute_us_per_step(job[1]) - compute_us_per_step(job[0])));
  EXPECT_NE(f[0].evidence.find("they wait for it"), std::string::npos) << f[0].evidence;
}

TEST(RankFindings, BalancedRanksAndSlowerWorkAtTheSamePace) {
  auto job = ddp_job("balanced");
  ASSERT_EQ(job.size(), 2u);
  EXPECT_TRUE(rank_findings(job).empty());
  EXPECT_NEAR(compute_us_per_step(job[0]) / compute_us_per_step(job[1]), 1.0, 0.05);
  // The same job with rank 0's operators 30% slower (a throttled core): same calls, slower work.
  for (auto& o : job[0].operators) o.host_self_us *= 1.3;
  const auto f = rank_findings(job);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].title, "Rank 0 is a straggler");
  EXPECT_NE(f[0].evidence.find("the same operators ran as often on both"), std::string::npos) << f[0].evidence;
  // One trace, or traces without ranks: nothing to compare.
  EXPECT_TRUE(rank_findings({job[0]}).empty());
  for (auto& a : job) a.rank = -1;
  EXPECT_TRUE(rank_findings(job).empty());
}
