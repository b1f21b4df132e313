# corpus: launch=python expect=refused:amp-reference
"""timm style: the autocast context manager chosen once and passed around as a value."""
from contextlib import suppress

import torch

use_amp = True
amp_autocast = torch.cuda.amp.autocast if use_amp else suppress
model = torch.nn.Linear(4, 4).cuda()
with amp_autocast():
    y = model(torch.randn(2, 4).cuda())
print("corpus-ok")
