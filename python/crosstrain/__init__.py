"""crosstrain's in-process agent: precision dumps of an unmodified PyTorch training script.

`crosstrain run [OPTIONS] -- python train.py ...` loads this package into the script's Python
process through the environment (PYTHONPATH and a sitecustomize that chains to any other one); the
script is never edited. The same agent can be started from the script itself, with the same options
and the same output:

    import crosstrain
    crosstrain.start(dump="dump_a", dump_steps="0-1", dump_level="both", seed=0)

The agent waits for `torch` to be imported, then finds training steps by itself (every
`torch.optim.Optimizer.step`, also through GradScaler, LR schedulers, DDP or fused optimizers; a
`step_marker="module:function"` names another boundary) and records what it was asked to. Asked
nothing, it installs nothing but the step counter. docs/RUN.md is the user's guide and
docs/DUMP_FORMAT.md the format it writes.
"""
from ._config import AgentConfig, ConfigError
from ._agent import start, stop, current

__all__ = ["start", "stop", "current", "AgentConfig", "ConfigError"]
__version__ = "0.1.0"
