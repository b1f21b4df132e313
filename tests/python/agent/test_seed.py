"""--seed: every source of randomness a script draws from is set before the script runs, DataLoader
workers included; --deterministic switches torch's deterministic algorithms on."""
import os
import unittest

from agent_test_support import load_json, run_under_agent, scratch

# Draws from Python's random, numpy and torch in the main process and in two DataLoader workers
# (their own seeds come from the loader's generator), and prints everything it drew.
DRAWS = """
import random
import numpy as np
import torch

class Noise(torch.utils.data.Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return torch.tensor([random.random(), float(np.random.rand()), torch.rand(()).item()])

if __name__ == "__main__":
    print("main", random.random(), float(np.random.rand()), torch.rand(2).tolist())
    loader = torch.utils.data.DataLoader(Noise(), batch_size=2, shuffle=True, num_workers=2)
    for batch in loader:
        print("batch", batch.flatten().tolist())
"""


class SeedTest(unittest.TestCase):
    def draws(self, config):
        d = scratch()
        r = run_under_agent(DRAWS, config, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_the_same_seed_draws_the_same_numbers_everywhere(self):
        a = self.draws({"seed": 7})
        b = self.draws({"seed": 7})
        self.assertEqual(a, b)
        self.assertEqual(a.count("batch"), 4)
        self.assertNotEqual(a, self.draws({"seed": 8}))

    def test_without_a_seed_the_runs_differ(self):
        # The script seeds nothing: the equality above is the agent's doing.
        self.assertNotEqual(self.draws({}), self.draws({}))

    def test_what_was_set_is_recorded_and_deterministic_mode_is_on(self):
        d = scratch()
        state = os.path.join(d, "state")
        os.makedirs(state)
        r = run_under_agent("""
import torch
print(torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
m = torch.nn.Linear(2, 1); opt = torch.optim.SGD(m.parameters(), lr=0.1)
m(torch.ones(1, 2)).sum().backward(); opt.step()
""", {"seed": 3, "deterministic": True, "state_dir": state}, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["True", "True", "False"])
        report = load_json(os.path.join(state, os.listdir(state)[0]))
        self.assertEqual(report["seed"]["seed"], 3)
        set_ = " ".join(report["seed"]["set"])
        for what in ("random.seed", "numpy.random.seed", "torch.manual_seed", "use_deterministic_algorithms",
                     "DataLoader"):
            self.assertIn(what, set_)


# Seeds torch itself (as Lightning's seed_everything and transformers' set_seed do), then shuffles
# with a DataLoader and draws a dropout mask: the draws follow torch's global generator.
SELF_SEEDED = """
import torch

torch.manual_seed(1)
data = torch.utils.data.TensorDataset(torch.arange(10.))
loader = torch.utils.data.DataLoader(data, batch_size=5, shuffle=True)
print("batches", [b[0].tolist() for b in loader])
print("mask", torch.nn.functional.dropout(torch.ones(12), 0.5).tolist())
later = torch.utils.data.DataLoader(data, batch_size=5, shuffle=True)
print("later", [b[0].tolist() for b in later])
"""


class SelfSeededScriptTest(unittest.TestCase):
    def test_a_script_that_seeds_itself_draws_what_it_draws_alone(self):
        d = scratch()
        alone = run_under_agent(SELF_SEEDED, None, d)
        self.assertEqual(alone.returncode, 0, alone.stderr)
        for seed in (0, 1):
            under = run_under_agent(SELF_SEEDED, {"seed": seed, "state_dir": d}, d)
            self.assertEqual(under.returncode, 0, under.stderr)
            self.assertEqual(under.stdout, alone.stdout, f"--seed {seed}")
        # A script that does not seed itself still gets the agent's loader generators: two seeds, two orders.
        unseeded = SELF_SEEDED.replace("torch.manual_seed(1)", "")
        a = run_under_agent(unseeded, {"seed": 0}, d).stdout
        self.assertEqual(a, run_under_agent(unseeded, {"seed": 0}, d).stdout)
        self.assertNotEqual(a, run_under_agent(unseeded, {"seed": 5}, d).stdout)


if __name__ == "__main__":
    unittest.main()
