"""Lightning's own demo language model (pytorch_lightning.demos: an nn.Transformer with a causal
mask written as -inf) trained by Lightning's Trainer on random tokens, as a Lightning user runs it:
automatic optimisation (the forward and backward run inside optimizer.step's closure) or manual
optimisation (manual_backward, then optimizer.step()). A few CPU steps of a small vocabulary.

--plant-nan K makes one NaN at step K (the square root of a negative number, on the line marked
below) past the causal mask's infinities: --stop-on-nonfinite must stop there, not at the mask.
--plant-factor F scales the decoder's input by F (a change of a copy of the code)."""
import argparse
import os
import warnings

import torch
import pytorch_lightning as pl
from pytorch_lightning.demos import LightningTransformer

VOCAB, T = 64, 8


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--mode", choices=["auto", "manual"], default="auto")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--plant-nan", type=int, default=-1)
    p.add_argument("--plant-factor", type=float, default=1.0)
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--start-method", default=None, help="their multiprocessing start method (spawn, forkserver)")
    return p.parse_args()


class Demo(LightningTransformer):
    def __init__(self):
        super().__init__(vocab_size=VOCAB)
        self.automatic_optimization = args.mode == "auto"

    def prepare_data(self):  # the demo downloads WikiText-2; these tokens are random
        pass

    def forward(self, inputs, target):
        out = self.model(inputs, target)
        if args.plant_factor != 1.0:
            out = out * args.plant_factor  # planted change
        if self.global_step == args.plant_nan:
            out = out + torch.sqrt(torch.tensor(-1.0))  # planted NaN
        return out

    def training_step(self, batch, batch_idx):
        if self.automatic_optimization:
            return super().training_step(batch, batch_idx)
        opt = self.optimizers()
        inputs, target = batch
        loss = torch.nn.functional.nll_loss(self(inputs, target), target.view(-1))
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()
        return loss


if __name__ == "__main__":  # spawn and forkserver workers import this file again
    args = parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, VOCAB, (32, T + 1), generator=g)
    data = torch.utils.data.TensorDataset(tokens[:, :-1], tokens[:, 1:])
    loader = torch.utils.data.DataLoader(data, batch_size=4, num_workers=args.workers,
                                         multiprocessing_context=args.start_method)
    pl.seed_everything(0, verbose=False)
    trainer = pl.Trainer(max_steps=args.steps, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
    trainer.fit(Demo(), loader)
    print(f"trained {trainer.global_step} steps", flush=True)
