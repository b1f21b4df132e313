"""--seed and --deterministic: every random source a training script draws from, set before it runs.

Seeds Python's `random` and numpy at start-up (numpy only if the script imports it, so a script
without numpy does not pay for it), torch on the CPU and every device when torch is imported, and
every DataLoader: one that was given no generator gets one seeded from the seed and its creation
order, so its shuffling and its workers' base seed no longer depend on what else drew from torch's
global generator; its workers then seed `random`, numpy and torch from that base seed (torch's own
rule) and a worker_init_fn of the script still runs after. Everything set is recorded.

A script that seeds torch itself (torch.manual_seed, as Lightning's seed_everything, transformers'
and accelerate's set_seed do) keeps its own seeds: from then on its DataLoaders get no generator of
the agent's, so they draw from torch's global generator as they do without the agent, and the
script's results are the ones it gives alone.
"""
import functools
import os
import random

from . import _lazy


class Seeder:
    def __init__(self, seed, deterministic):
        self.seed = int(seed)
        self.deterministic = bool(deterministic)
        self.record = {"seed": self.seed, "deterministic": self.deterministic, "set": []}
        self._loaders = 0
        self._script_seeded = False  # the script called torch.manual_seed itself

    def _note(self, what):
        self.record["set"].append(what)

    def at_start(self):
        random.seed(self.seed)
        self._note("random.seed")
        _lazy.when_imported("numpy", self._seed_numpy)
        if os.environ.get("PYTHONHASHSEED") is not None:
            self._note(f"PYTHONHASHSEED={os.environ['PYTHONHASHSEED']}")

    def _seed_numpy(self, np):
        np.random.seed(self.seed % 2 ** 32)
        self._note("numpy.random.seed")

    def at_torch(self, torch):
        torch.manual_seed(self.seed)  # the CPU and every device's default generator
        self._note("torch.manual_seed (CPU and all devices)")
        if self.deterministic:
            torch.use_deterministic_algorithms(True, warn_only=False)
            self._note("torch.use_deterministic_algorithms(True)")
            torch.backends.cudnn.deterministic = True
            torch.backends.cudnn.benchmark = False
            self._note("torch.backends.cudnn.deterministic=True, benchmark=False")
            if os.environ.get("CUBLAS_WORKSPACE_CONFIG"):
                self._note(f"CUBLAS_WORKSPACE_CONFIG={os.environ['CUBLAS_WORKSPACE_CONFIG']}")
        self._watch_manual_seed(torch)
        self._patch_dataloader(torch)

    def _watch_manual_seed(self, torch):
        """Notes that the script seeds torch itself (the agent's own call came before this)."""
        original = torch.manual_seed
        if getattr(original, "_crosstrain", False):
            return
        seeder = self

        @functools.wraps(original)
        def manual_seed(seed):
            if not seeder._script_seeded:
                seeder._script_seeded = True
                seeder._note("the script seeds torch itself: its DataLoaders keep torch's global generator")
            return original(seed)

        manual_seed._crosstrain = True
        torch.manual_seed = manual_seed
        if getattr(torch.random, "manual_seed", None) is original:
            torch.random.manual_seed = manual_seed

    def _patch_dataloader(self, torch):
        from torch.utils.data import DataLoader
        if getattr(DataLoader.__init__, "_crosstrain", False):
            return
        original = DataLoader.__init__
        seeder = self

        def init(loader, *args, **kwargs):
            if kwargs.get("generator") is None and len(args) < 13 and not seeder._script_seeded:  # 13th positional
                g = torch.Generator()
                g.manual_seed(seeder.seed * 1000003 + seeder._loaders)
                kwargs["generator"] = g
                seeder._loaders += 1
            original(loader, *args, **kwargs)

        init._crosstrain = True
        DataLoader.__init__ = init
        self._note("DataLoader generators (seed * 1000003 + creation index) and worker seeds from them")
