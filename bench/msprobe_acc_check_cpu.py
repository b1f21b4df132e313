"""MindStudio Probe's acc_check (run_ut in older releases) over a dump.json, timed. On a machine
without CUDA or an Ascend NPU it does not start (it calls torch.cuda.set_device and stops with "Found
no NVIDIA driver"); here its device is set to the CPU instead, so both of its runs (the float64
"bench" and the "device" run) execute on the CPU: what is measured is the tool's own cost per API,
as `crosstrain op-check --from-dump --device cpu` measures its own.
Prints one line: APIS SECONDS CPU_SECONDS (the loop over the dump's APIs, without start-up; CPU
time of the process over the loop).
usage: PYTHONPATH=<msprobe install> python bench/msprobe_acc_check_cpu.py DUMP_JSON OUT_DIR"""
import os
import sys
import time

# Its logger writes to the stdout it found at import: the process's stdout goes to /dev/null, the
# result line to the stdout the caller gave.
result_fd = os.dup(1)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
import torch  # noqa: E402

torch.cuda.set_device = lambda *a, **k: None
torch.cuda.empty_cache = lambda: None
from msprobe.pytorch.api_accuracy_checker.acc_check import acc_check as ac  # noqa: E402
from msprobe.pytorch.api_accuracy_checker.acc_check import acc_check_utils as utils  # noqa: E402

ac.current_device = utils.current_device = "cpu"
timing = {}
loop = ac.run_api_offline


def timed(config, compare, names):
    timing["apis"] = len(config.forward_content)
    t0, c0 = time.perf_counter(), time.process_time()
    loop(config, compare, names)
    timing["seconds"] = time.perf_counter() - t0
    timing["cpu_seconds"] = time.process_time() - c0


ac.run_api_offline = timed
sys.argv = ["msprobe", "acc_check", "-api_info", sys.argv[1], "-o", sys.argv[2]]
from msprobe.msprobe import main  # noqa: E402

main()
os.write(result_fd, f"{timing['apis']} {timing['seconds']} {timing['cpu_seconds']}\n".encode())
