"""The agent's compiled statistics (src/agent, loaded by _native.py) against its pure-Python path:
the same statistics for every dtype, layout and non-finite case, and the same records from the same
training program. CROSSTRAIN_AGENT_NATIVE names the library (CTest sets it; without it these tests
are skipped)."""
import math
import os
import sys
import unittest

from agent_test_support import REPO, read_index, run_under_agent, scratch

LIBRARY = os.environ.get("CROSSTRAIN_AGENT_NATIVE", "")
sys.path.insert(0, os.path.join(REPO, "python"))

# Sums and norms agree to the Python path's documented accuracy (it sums rows of 512 in float32, the
# compiled one every element in float64), relative to the sum's scale (the elements' norm times
# sqrt(n)); max, min and the counts exactly.
SUM_TOLERANCE = 1e-6


def close(a, b, scale):
    return abs(a - b) <= SUM_TOLERANCE * max(scale, 1e-300)


@unittest.skipUnless(LIBRARY and os.path.isfile(LIBRARY), "CROSSTRAIN_AGENT_NATIVE names no library")
class NativeStatisticsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import torch
        from crosstrain import _native, _stats
        cls.torch, cls.native, cls.stats = torch, _native, _stats
        if _native.library() is None:
            raise AssertionError(f"the library did not load: {_native.why_not}")

    def assert_same(self, t, label):
        native = self.native.cpu_stats(self.torch, t)
        self.assertIsNotNone(native, label)
        python = self.stats.python_vector(t.detach(), t.numel())
        self.assertEqual(native[4:], python[4:], f"{label}: counts")
        a, b = self.stats.to_record_stats(native), self.stats.to_record_stats(python)
        if a["max"] is None:
            self.assertEqual(a, b, label)
            return
        self.assertEqual((a["max"], a["min"]), (b["max"], b["min"]), label)
        scale = b["norm"] * math.sqrt(t.numel())
        self.assertTrue(close(a["mean"] * native[6], b["mean"] * python[6], scale), f"{label}: {a} vs {b}")
        self.assertTrue(close(a["norm"], b["norm"], b["norm"]), f"{label}: {a} vs {b}")

    def test_every_format_dtype_and_size(self):
        torch = self.torch
        g = torch.Generator().manual_seed(0)
        for n in (1, 3, 513, 2048, 4096 + 7, 70000):
            x = torch.randn(n, generator=g, dtype=torch.float64) * 300
            for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                          torch.uint8, torch.bool):
                t = (x.abs() if dtype == torch.uint8 else x).clamp(-60000, 60000).to(dtype)
                self.assert_same(t, f"{dtype} n={n}")

    def test_non_finite_values_are_counted_and_left_out(self):
        torch = self.torch
        for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
            t = torch.linspace(-5, 5, 4099).to(dtype)
            t[7], t[100], t[4000] = float("nan"), float("inf"), -float("inf")
            self.assert_same(t, f"{dtype} with nan/inf")
            self.assert_same(torch.full((9,), float("nan"), dtype=dtype), f"{dtype} all nan")
            self.assert_same(torch.tensor([float("inf"), -float("inf")], dtype=dtype), f"{dtype} all inf")
        self.assert_same(torch.tensor([6.0e-8, -6.0e-8, 1e-5], dtype=torch.float16), "float16 subnormals")

    def test_layouts_that_fill_one_block_are_read_in_place(self):
        torch = self.torch
        x = torch.randn(6, 5, 4, 3)
        for label, t in (("transpose", x.transpose(0, 3)), ("channels last", x.contiguous(memory_format=torch.channels_last)),
                         ("expanded size-1 dims", torch.randn(1, 7).expand(1, 7)), ("scalar", torch.tensor(2.5))):
            self.assert_same(t, label)
        for label, t in (("a slice with gaps", x[:, :, :2]), ("a broadcast", torch.randn(1, 7).expand(3, 7)),
                         ("a step", x.reshape(-1)[::2])):
            self.assertIsNone(self.native.cpu_stats(torch, t), label)  # the Python path takes these
        self.assertIsNone(self.native.cpu_stats(torch, torch.randn(3, dtype=torch.complex64).conj().imag), "neg view")

    def test_a_library_of_another_interface_is_not_used(self):
        d = scratch()
        source = os.path.join(d, "lib.c")
        with open(source, "w") as f:
            f.write("int crosstrain_tensor_stats_version(void) { return 999; }\n")
        so = os.path.join(d, "libother.so")
        if os.system(f"cc -shared -fPIC -o {so} {source}") != 0:
            self.skipTest("no C compiler")
        r = run_under_agent(f"""
            import os
            os.environ["CROSSTRAIN_AGENT_NATIVE"] = {so!r}
            from crosstrain import _native
            print(_native.library() is None, _native.why_not)
            """, None, d, pythonpath=[os.path.join(REPO, "python")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("True"), r.stdout)
        self.assertIn("another interface version", r.stdout)


PROGRAM = """
import math, torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
torch.set_num_threads(1)
class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm, self.qkv, self.out = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
    def forward(self, x):
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        att = att.masked_fill(torch.ones_like(att, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        return x + self.out(att @ v)
model = nn.Sequential(nn.Embedding(50, 32), Attention(32), Attention(32), nn.LayerNorm(32), nn.Linear(32, 50))
model[0].weight.data = model[0].weight.data.to(torch.bfloat16).float()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(2):
    x = torch.randint(0, 50, (4, 12))
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=step == 1):
        loss = F.cross_entropy(model(x).float().reshape(-1, 50), x.roll(1, 1).reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@unittest.skipUnless(LIBRARY and os.path.isfile(LIBRARY), "CROSSTRAIN_AGENT_NATIVE names no library")
class NativeRecordsTest(unittest.TestCase):
    def test_one_program_gives_the_same_records_on_both_paths(self):
        """A model with masked attention (infinities), autocast (bfloat16) and AdamW, every record of
        both levels and the optimizer's operators: the compiled and the Python statistics."""
        dumps = {}
        for label, native in (("compiled", LIBRARY), ("python", "0")):
            d = scratch()
            r = run_under_agent(PROGRAM, {"dump": "dump", "dump_level": "both", "dump_steps": "",
                                          "dump_optimizer_ops": True}, d, env_extra={"CROSSTRAIN_AGENT_NATIVE": native})
            self.assertEqual(r.returncode, 0, r.stderr)
            dumps[label] = read_index(os.path.join(d, "dump"))[1]
        a, b = dumps["compiled"], dumps["python"]
        self.assertGreater(len(a), 300)
        self.assertEqual([(r["name"], r["kind"], r["dtype"], r["shape"]) for r in a],
                         [(r["name"], r["kind"], r["dtype"], r["shape"]) for r in b])
        dtypes = {r["dtype"] for r in a}
        self.assertTrue({"float32", "bfloat16", "int64", "bool"} <= dtypes, dtypes)
        with_inf = 0
        for ra, rb in zip(a, b):
            sa, sb = ra.pop("stats"), rb.pop("stats")
            self.assertEqual(ra, rb)  # names, op fields, sources: everything but the statistics
            self.assertEqual((sa["max"], sa["min"], sa["nan_count"], sa["inf_count"]),
                             (sb["max"], sb["min"], sb["nan_count"], sb["inf_count"]), ra["name"])
            with_inf += sa["inf_count"] > 0
            if sa["mean"] is None:
                self.assertIsNone(sb["mean"], ra["name"])
                continue
            n = math.prod(ra["shape"]) - sa["nan_count"] - sa["inf_count"]
            scale = sb["norm"] * math.sqrt(max(n, 1))
            self.assertTrue(close(sa["mean"] * n, sb["mean"] * n, scale), (ra["name"], sa, sb))
            self.assertTrue(close(sa["norm"], sb["norm"], sb["norm"]), (ra["name"], sa, sb))
        self.assertGreater(with_inf, 0)  # the masked scores went through the exact pass of both


if __name__ == "__main__":
    unittest.main()
