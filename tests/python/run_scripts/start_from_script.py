"""The agent's second route: the script starts it itself (after `pip install ./python`), with the
options `crosstrain run` takes as flags. Arguments: DUMP_DIR, then the MLP's steps."""
import sys

import crosstrain

crosstrain.start(dump=sys.argv[1], dump_level="both", dump_steps="0-1", seed=0)

import torch  # noqa: E402  (after start: the agent waits for torch either way)

torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(int(sys.argv[2])):
    x, y = torch.randn(5, 8), torch.randint(0, 4, (5,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(repr(loss.item()))
