import torch
m = model.cuda(); torch.backends.cudnn.benchmark = True
with torch.cuda.amp.autocast():
	pass
