"""--profile: the trace of each cycle and, beside it, <trace>.sources.json: the line each Python
call of the recorded steps was made from (joined to the trace by start time), the DataLoaders the
script built, and DataLoader.__iter__ as a span of its own."""
import json
import os
import unittest

from agent_test_support import load_json, run_under_agent, scratch, torch_version

# Line numbers below are those of this program as written to prog.py (the first line is empty).
PROGRAM = """
import torch, torch.nn as nn
torch.set_num_threads(1)
data = torch.utils.data.TensorDataset(torch.randn(12, 8), torch.randint(0, 4, (12,)))
loader = torch.utils.data.DataLoader(data, batch_size=4, shuffle=True)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("loss", loss.item())
"""


class ProfileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = scratch()
        cls.result = run_under_agent(PROGRAM, {"profile": "prof"}, cls.dir)
        cls.trace_path = os.path.join(cls.dir, "prof", "cycle0", "rank0.pt.trace.json")
        cls.sources_path = os.path.join(cls.dir, "prof", "cycle0", "rank0.pt.trace.sources.json")

    def test_the_run_is_quiet_and_writes_a_trace_and_its_call_sites(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)
        self.assertNotIn("Profiler clears events", self.result.stderr)
        self.assertTrue(os.path.isfile(self.trace_path), self.result.stderr)
        doc = load_json(self.sources_path)
        self.assertEqual((doc["format"], doc["version"]), ("crosstrain-call-sites", 1))
        self.assertGreater(doc["cpus"], 0)

    def test_each_call_site_is_a_python_event_of_the_trace_and_names_its_callers_line(self):
        trace, doc = load_json(self.trace_path), load_json(self.sources_path)
        base = trace.get("baseTimeNanoseconds", 0)  # torch 2.1: none, whole microseconds of the clock
        starts = {base + round(e["ts"] * 1000): e["name"] for e in trace["traceEvents"]
                  if e.get("cat") == "python_function"}
        files = doc["files"]
        self.assertEqual(files[0][:2], ["prog.py", "user"])
        self.assertTrue(doc["calls"])
        for start, file, line, _ in doc["calls"]:
            self.assertIn(start, starts)
        by_line = {}
        for start, file, line, _ in doc["calls"]:
            if files[file][0] == "prog.py":
                by_line.setdefault(line, []).append(starts[start])
        # loss.item() on line 14, the model's call on line 10, the loop's __next__ on line 9.
        self.assertTrue(any(n.startswith("<built-in method item of Tensor") for n in by_line[14]), by_line[14])
        self.assertTrue(any(n.startswith("nn.Module: Sequential") for n in by_line[10]), by_line[10])
        self.assertTrue(any(n.endswith(": __next__") for n in by_line[9]), by_line[9])
        code = {(f, l): text for f, l, text in doc["lines"]}
        self.assertEqual(code[(0, 14)], 'print("loss", loss.item())')

    def test_the_dataloader_is_named_with_its_settings_and_line(self):
        doc = load_json(self.sources_path)
        self.assertEqual(len(doc["dataloaders"]), 1)
        d = doc["dataloaders"][0]
        self.assertEqual((d["num_workers"], d["pin_memory"], d["persistent_workers"], d["prefetch_factor"],
                          d["batch_size"], d["dataset"], d["iterators"]),
                         (0, False, False, None, 4, "TensorDataset", 2))
        self.assertEqual((d["made_at"]["file"], d["made_at"]["line"]), ("prog.py", 5))

    def test_an_epoch_begun_inside_the_recorded_steps_is_a_span(self):
        # Three batches an epoch: the second epoch's iterator starts in ProfilerStep#3.
        events = load_json(self.trace_path)["traceEvents"]
        steps = {e["name"]: e for e in events if e.get("name", "").startswith("ProfilerStep#")}
        starts = [e for e in events if e.get("name", "").startswith("DataLoader.__iter__ (num_workers=0")]
        self.assertEqual(len(starts), 1, [e.get("name") for e in events if "DataLoader" in e.get("name", "")])
        # torch before 2.3 labels step N ProfilerStep#N-1 (pytorch/pytorch#121126).
        s3 = steps["ProfilerStep#3" if torch_version() >= (2, 3) else "ProfilerStep#2"]
        self.assertTrue(s3["ts"] <= starts[0]["ts"] < s3["ts"] + s3["dur"])

    def test_without_stacks_the_side_file_has_no_calls(self):
        d = scratch()
        r = run_under_agent(PROGRAM, {"profile": "prof", "profile_stack": False}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = load_json(os.path.join(d, "prof", "cycle0", "rank0.pt.trace.sources.json"))
        self.assertNotIn("calls", doc)
        self.assertEqual(doc["dataloaders"][0]["made_at"]["line"], 5)


if __name__ == "__main__":
    unittest.main()
