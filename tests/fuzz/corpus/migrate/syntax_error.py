def f(:
  torch.cuda.synchronize(
