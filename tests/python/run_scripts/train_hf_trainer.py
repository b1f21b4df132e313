"""transformers' Trainer on a small BERT built from a config (no weights downloaded), as a Trainer
user runs it: TrainingArguments, a Dataset of tokenised examples, trainer.train(). Gradient
accumulation 2: two forwards and backwards for each optimizer step. A few CPU steps.

--plant-factor F scales the output of one attention layer's query projection by F (a change of
a copy of the code)."""
import argparse
import os
import tempfile
import warnings

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
from transformers.utils import logging as hf_logging

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--accumulation", type=int, default=2)
p.add_argument("--plant-factor", type=float, default=1.0)
args = p.parse_args()
torch.set_num_threads(1)
warnings.filterwarnings("ignore")
hf_logging.set_verbosity_error()

VOCAB, T = 100, 12
config = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=T, num_labels=3)


class Examples(torch.utils.data.Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, VOCAB, (n, T), generator=g)
        self.labels = torch.randint(0, 3, (n,), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(T, dtype=torch.long), "labels": self.labels[i]}


torch.manual_seed(0)
model = BertForSequenceClassification(config)
if args.plant_factor != 1.0:
    query = model.bert.encoder.layer[1].attention.self.query
    query.register_forward_hook(lambda m, i, o: o * args.plant_factor)  # planted change
out = tempfile.mkdtemp(prefix="hf_trainer_")
training = TrainingArguments(output_dir=out, max_steps=args.steps, per_device_train_batch_size=4,
                             gradient_accumulation_steps=args.accumulation, learning_rate=1e-3, use_cpu=True,
                             report_to=[], save_strategy="no", logging_steps=1, disable_tqdm=True, seed=0,
                             dataloader_num_workers=0)
trainer = Trainer(model=model, args=training, train_dataset=Examples(64))
result = trainer.train()
print(f"trained {result.global_step} steps", flush=True)
