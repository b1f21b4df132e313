// `crosstrain align` and `crosstrain op-check` through the binary: exit codes and what they print;
// and a crosstrain dump against python/dump_torch.py for the same torchvision weights and input.
#include <string>

#include "test_support.h"

using namespace crosstrain::testing;

namespace {

const std::string kTiny =
    " --model resnet18 --small-stem --image-size 16 --batch-size 2 --num-classes 10 --steps 2 --threads 1"
    " --lr 0.01 --no-progress";

std::string align_cmd(const std::string& out, const std::string& a, const std::string& b, const std::string& extra = "") {
  return binary() + " align --a \"" + a + "\" --b \"" + b + "\" --out " + out + kTiny + extra;
}

}  // namespace

TEST(AlignCli, IdenticalSidesAgree) {
  const auto dir = scratch_dir("align_same");
  auto r = run_command(align_cmd((dir / "out").string(), "device=cpu precision=fp32", "device=cpu threads=1"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the runs agree"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "a" / "index.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "b" / "index.jsonl"));
}

TEST(AlignCli, PerturbedSideDiffersAtThatLayer) {
  const auto dir = scratch_dir("align_perturb");
  auto r = run_command(align_cmd((dir / "out").string(), "device=cpu", "device=cpu",
                                 " --perturb-module layer3.0.conv1=0.5"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("forward/layer3.0.conv1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the runs differ"), std::string::npos) << r.output;
}

TEST(AlignCli, InjectedNaNIsFoundAndTheStoppedRunSaid) {
  const auto dir = scratch_dir("align_nan");
  auto r = run_command(align_cmd((dir / "out").string(), "device=cpu", "device=cpu",
                                 " --inject-nan-module layer1.0.bn1"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("forward/layer1.0.bn1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("run B stopped early"), std::string::npos) << r.output;
}

TEST(AlignCli, Fp32AgainstBf16Agrees) {
  const auto dir = scratch_dir("align_bf16");
  auto r = run_command(align_cmd((dir / "out").string(), "device=cpu precision=fp32", "device=cpu precision=bf16"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(AlignCli, BadSideSpecIsExit2) {
  const auto dir = scratch_dir("align_bad");
  auto r = run_command(align_cmd((dir / "out").string(), "device=cpu colour=blue", "device=cpu"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown key 'colour'"), std::string::npos) << r.output;
  r = run_command(align_cmd((dir / "out").string(), "device=cpu", "threads=many"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_command(align_cmd((dir / "out").string(), "device=cpu", "precision=fp8"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(OpCheckCli, PassesAndFilters) {
  auto r = run_command(binary() + " op-check --device cpu --precision fp32 --op linear");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("grad_weight"), std::string::npos) << r.output;
  r = run_command(binary() + " op-check --op nothing_like_this");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_command(binary() + " op-check --precision fp7");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_command(binary() + " op-check --op relu --json -", /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("\"kind\": \"op-check\""), std::string::npos) << r.output;  // the command's name
}

// op-check --from-dump through the binary on a small operator dump numpy writes: a matrix product,
// a dropout mask, a product that float16 underflows, and a record whose inputs were not kept.
TEST(OpCheckCli, FromDumpExitCodes) {
  const auto dir = scratch_dir("op_replay_cli");
  const std::string d = (dir / "dump").string();
  const std::string writer =
      "import json, os, numpy as np\n"
      "d = '" + d + "'\n"
      "os.makedirs(d + '/tensors/step0')\n"
      "def arr(name, a):\n"
      "    np.save(d + '/tensors/step0/' + name + '.npy', a)\n"
      "    return {'tensor': 'tensors/step0/' + name + '.npy', 'dtype': str(a.dtype), 'shape': list(a.shape), 'device': 'cpu'}\n"
      "rng = np.random.default_rng(0)\n"
      "a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)\n"
      "small = np.full((8,), 1e-4, np.float32)\n"
      "calls = [('aten::mm', 'default', [('self', arr('a', a)), ('mat2', arr('b', b))], a @ b, {}),\n"
      "         ('aten::bernoulli_', 'float', [('self', arr('m', np.ones((16,), np.float32))), ('p', 0.5)],\n"
      "          np.ones((16,), np.float32), {'random': True}),\n"
      "         ('aten::mul', 'Tensor', [('self', arr('s', small)), ('other', arr('t', small))], small * small, {})]\n"
      "lines = [{'format': 'crosstrain-dump', 'version': 1, 'mode': 'tensors', 'producer': 'test', 'meta': {}}]\n"
      "for seq, (name, overload, args, out, extra) in enumerate(calls):\n"
      "    op = {'name': name, 'overload': overload, 'phase': 'forward', 'module': 'm',\n"
      "          'args': [{'name': k, 'value': v} for k, v in args], **extra}\n"
      "    lines.append({'seq': seq, 'step': 0, 'name': 'op_forward/m/' + name.replace('::', '.'), 'kind': 'op_forward',\n"
      "                  'dtype': 'float32', 'shape': list(out.shape), 'stats': {'nan_count': 0, 'inf_count': 0},\n"
      "                  'file': arr('out%d' % seq, out)['tensor'], 'op': op})\n"
      "lines.append(dict(lines[1], seq=3, name='op_forward/m/aten.mm#1', op={k: v for k, v in lines[1]['op'].items() if k != 'args'}))\n"
      "open(d + '/index.jsonl', 'w').write(''.join(json.dumps(l) + '\\n' for l in lines))\n";
  auto r = run_command(python() + " -c \"" + writer + "\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  r = run_command(binary() + " op-check --from-dump " + d);
  EXPECT_EQ(r.exit_code, 0) << r.output;  // what is not replayed is listed, not failed
  EXPECT_NE(r.output.find("4 operator calls: 2 replayed (2 passed, 0 failed), 2 not replayed"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("random: a seeded random operator"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no inputs recorded: dump with --dump-mode tensors"), std::string::npos) << r.output;

  r = run_command(binary() + " op-check --from-dump " + d + " --precision fp16");
  EXPECT_EQ(r.exit_code, 1) << r.output;  // 1e-4 squared is below float16's smallest subnormal
  EXPECT_NE(r.output.find("aten::mul.Tensor"), std::string::npos) << r.output;

  r = run_command(binary() + " op-check --from-dump " + d + " --op aten::mm --json -", /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("\"mode\": \"from_dump\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"record\": \"op_forward/m/aten.mm\""), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("bernoulli"), std::string::npos) << r.output;

  r = run_command(binary() + " op-check --from-dump " + d + " --op aten::conv");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_command(binary() + " op-check --from-dump " + (dir / "missing").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output, "crosstrain: error: " + (dir / "missing").string() + ": not a directory\n");
}

TEST(TrainDumpCli, MatchesTorchvisionInPython) {
  const auto dir = scratch_dir("align_python");
  const std::string in = (dir / "in").string(), w = (dir / "w.pt").string();
  std::filesystem::create_directories(in);
  const std::string setup =
      "import numpy as np, torch, torchvision\n"
      "torch.manual_seed(0)\n"
      "m = torchvision.models.resnet18(num_classes=10)\n"
      "torch.save(dict(m.state_dict()), '" + w + "')\n"
      "np.save('" + in + "/images.npy', torch.randn(2, 3, 32, 32).numpy())\n"
      "np.save('" + in + "/labels.npy', np.array([3, 7], dtype=np.int64))\n";
  auto r = run_command(python() + " -c \"" + setup + "\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(python() + " " + source_dir() + "/python/dump_torch.py --model resnet18 --num-classes 10 --out " +
                  (dir / "py").string() + " --steps 0 --num-steps 1 --weights " + w + " --input-npy " + in +
                  " --threads 1 --batch-size 2 --image-size 32");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(binary() + " train --device cpu --model resnet18 --num-classes 10 --weights " + w +
                  " --input-npy " + in + " --steps 1 --warmup-steps 0 --threads 1 --batch-size 2 --image-size 32"
                  " --no-progress --dump " + (dir / "ct").string() + " --dump-mode tensors --dump-steps 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(binary() + " compare " + (dir / "py").string() + " " + (dir / "ct").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Same module set on both sides, every forward output and gradient compared.
  EXPECT_NE(r.output.find("error 0; missing in A 0, missing in B 0"), std::string::npos) << r.output;
}

// A side that cannot run says which and why, with its own exit status: never "the runs differ".
TEST(AlignCli, ASideThatCannotRunIsAnErrorNotADifference) {
  const auto dir = scratch_dir("align_side_fails");
  // A device that does not exist on B: refused before A trains.
  auto r = run_command(align_cmd((dir / "dev").string(), "device=cpu", "device=nosuchdevice"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("run B (device=nosuchdevice): unknown device"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("running A"), std::string::npos) << r.output;
  // Weights that cannot be read: A fails first.
  r = run_command(align_cmd((dir / "weights").string(), "device=cpu", "device=cpu", " --weights /nonexistent/w.pt"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("crosstrain: error: run A (device=cpu) failed: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/w.pt"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("differ"), std::string::npos) << r.output;
  // B's device opens but has no kernels: B fails while training, after A finished.
  r = run_command(align_cmd((dir / "kernels").string(), "device=cpu",
                            std::string("device=fakenpu:0 backend_lib=") + FAKE_BACKEND_LIB));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("crosstrain: error: run B (device=fakenpu:0 backend_lib="), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("differ"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("frame #"), std::string::npos) << r.output;
}

// A side that trains as 2 data-parallel processes against one process that accumulates 2
// micro-batches: the same samples per step, so rank 0's dump (forward outputs, the gradients into
// every module, parameter gradients after the all-reduce, the loss) matches record for record.
TEST(AlignCli, OneProcessAgainstDataParallelRanksAgrees) {
  const auto dir = scratch_dir("align_ranks");
  const std::string tiny = " --model resnet18 --small-stem --image-size 16 --batch-size 4 --num-classes 10 --steps 3"
                           " --lr 0.01 --no-progress";
  auto r = run_command(binary() + " align --a threads=1 --b 'nproc=2 threads=1' --dump-steps 0-2 --out " +
                       (dir / "two").string() + tiny);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("run A accumulates 2 micro-batches per step"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("warn 0, error 0; missing in A 0, missing in B 0"), std::string::npos) << r.output;
  for (const char* rank : {"rank0", "rank1"})
    EXPECT_TRUE(std::filesystem::exists(dir / "two" / "b" / rank / "index.jsonl")) << rank;
  // Four ranks against four micro-batches, on the first step (later steps part by rounding).
  r = run_command(binary() + " align --a threads=1 --b 'nproc=4 threads=1' --out " + (dir / "four").string() + tiny);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("run A accumulates 4 micro-batches per step"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("error 0; missing in A 0, missing in B 0"), std::string::npos) << r.output;
}

TEST(AlignCli, ADisturbedRankSideDiffersAtThatLayer) {
  const auto dir = scratch_dir("align_ranks_perturb");
  auto r = run_command(align_cmd((dir / "out").string(), "threads=1", "nproc=2 threads=1",
                                 " --perturb-module layer3.0.conv1=0.5"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("first divergence: step 0 forward/layer3.0.conv1"), std::string::npos) << r.output;
}

TEST(AlignCli, SidesThatWouldSeeDifferentSamplesAreRefused) {
  const auto dir = scratch_dir("align_ranks_bad");
  auto r = run_command(align_cmd((dir / "out").string(), "accumulate_steps=1", "nproc=2"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("the sides would train on different samples"), std::string::npos) << r.output;
  r = run_command(align_cmd((dir / "out").string(), "nproc=3", "nproc=2"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_command(align_cmd((dir / "out").string(), "nproc=0", "threads=1"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--a nproc: expected an integer from 1 to "), std::string::npos) << r.output;
  r = run_command(align_cmd((dir / "out").string(), "threads=1", "nproc=100000"));  // not 100000 processes
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "a"));  // refused before anything ran
}
