// Rule-by-rule fixtures: an input, a target, the exact expected output. Each fixture is also run
// a second time on its own output, which must change nothing (idempotence).
#include "tools/migrate/file_migration.h"

#include <gtest/gtest.h>

using namespace crosstrain::migrate;

namespace {

const std::string kDefinition =
    "_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\n";

struct Fixture {
  const char* name;
  Target target;
  std::string input;
  std::string expected;
};

std::ostream& operator<<(std::ostream& os, const Fixture& f) { return os << f.name; }

const Target A = Target::DeviceAgnostic, N = Target::Npu, C = Target::Cpu;

std::vector<Fixture> fixtures() {
  return {
      {"tensor_cuda_agnostic", A, "import torch\nx = torch.ones(2).cuda()\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nx = torch.ones(2).to(_accel_device)\n"},
      {"tensor_cuda_index_npu", N, "import torch\nm.cuda(1)\n",
       "import torch\nimport torch_npu\nm.to(torch.device(\"npu\", 1))\n"},
      {"tensor_cuda_index_agnostic", A, "import torch\nm.cuda(rank)\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nm.to(torch.device(_accel_device.type, rank))\n"},
      {"tensor_cuda_non_blocking_cpu", C, "y = x.cuda(0, True)\nz = x.cuda(non_blocking=True)\n",
       "y = x.to(\"cpu\", non_blocking=True)\nz = x.to(\"cpu\", non_blocking=True)\n"},
      {"tensor_cuda_keeps_spacing", C, "y = x.cuda( 0 ,True )  # keep\n",
       "y = x.to( \"cpu\" ,non_blocking=True )  # keep\n"},
      {"tensor_cuda_inner_reference", A, "import torch\na = x.cuda(torch.cuda.current_device())\n",
       "import torch\na = x.cuda(torch.cuda.current_device())\n"},
      {"is_available_agnostic", A, "import torch\nok = torch.cuda.is_available()\n",
       "import torch\nok = torch.accelerator.is_available()\n"},
      {"is_available_npu", N, "import torch\nok = torch.cuda.is_available()\n",
       "import torch\nok = torch.npu.is_available()\n"},
      {"is_available_cpu", C, "import torch\nok = torch.cuda.is_available()\n",
       "import torch\nok = torch.cuda.is_available()\n"},
      {"device_api_alias", A, "import torch as th\nn = th.cuda.device_count()\nth.cuda.set_device(0)\nth.cuda.synchronize()\n",
       "import torch as th\n_accel_device = th.accelerator.current_accelerator() if th.accelerator.is_available() else th.device(\"cpu\")\nn = th.cuda.device_count()\nth.get_device_module(_accel_device).set_device(0)\nth.get_device_module(_accel_device).synchronize()\n"},
      {"current_device", N, "import torch\nimport torch_npu\ni = torch.cuda.current_device()\n",
       "import torch\nimport torch_npu\ni = torch.npu.current_device()\n"},
      {"seeds", A, "import torch\ntorch.cuda.manual_seed(1)\ntorch.cuda.manual_seed_all(1)\n",
       "import torch\ntorch.cuda.manual_seed(1)\ntorch.cuda.manual_seed_all(1)\n"},
      {"memory_agnostic", A, "import torch\ntorch.cuda.empty_cache()\na = torch.cuda.memory_allocated()\nb = torch.cuda.max_memory_allocated()\ntorch.cuda.reset_peak_memory_stats()\n",
       "import torch\n" + kDefinition + "torch.accelerator.memory.empty_cache()\na = torch.accelerator.memory.memory_allocated()\nb = torch.accelerator.memory.max_memory_allocated()\n"
       "(torch.get_device_module(_accel_device).reset_peak_memory_stats() if hasattr(torch.get_device_module(_accel_device), \"reset_peak_memory_stats\") else None)\n"},
      {"memory_npu", N, "import torch\na = torch.cuda.max_memory_allocated()\n",
       "import torch\na = torch.npu.max_memory_allocated()\n"},
      {"stream_event", A, "import torch\ns = torch.cuda.Stream()\ne = torch.cuda.Event(enable_timing=True)\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ns = torch.get_device_module(_accel_device).Stream()\ne = torch.cuda.Event(enable_timing=True)\n"},
      {"autocast_positional_npu", N, "import torch\nwith torch.cuda.amp.autocast(True, torch.bfloat16):\n    pass\n",
       "import torch\nimport torch_npu\nwith torch.amp.autocast(device_type=\"npu\", enabled=True, dtype=torch.bfloat16):\n    pass\n"},
      {"autocast_no_args_agnostic", A, "import torch\nwith torch.cuda.amp.autocast():\n    pass\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nwith torch.amp.autocast(device_type=_accel_device.type):\n    pass\n"},
      {"amp_imported_names", C, "from torch.cuda.amp import autocast, GradScaler as GS\nscaler = GS()\nwith autocast(dtype=torch.bfloat16):\n    pass\n",
       "from torch.amp import autocast, GradScaler as GS\nscaler = GS(device=\"cpu\")\nwith autocast(device_type=\"cpu\", dtype=torch.bfloat16):\n    pass\n"},
      {"gradscaler_positional", N, "import torch\ns = torch.cuda.amp.GradScaler(2.0**16, enabled=True)\n",
       "import torch\ns = torch.amp.GradScaler(\"npu\", 2.0**16, enabled=True)\n"},
      {"torch_autocast_string", A, "import torch\nwith torch.autocast(\"cuda\", dtype=torch.float16):\n    pass\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nwith torch.autocast(_accel_device.type, dtype=torch.float16):\n    pass\n"},
      {"device_type_keyword", N, "import torch\nwith torch.autocast(device_type='cuda'):\n    pass\n",
       "import torch\nimport torch_npu\nwith torch.autocast(device_type='npu'):\n    pass\n"},
      {"device_keyword_and_map_location", N, "import torch\nt = torch.zeros(2, device='cuda')\ns = torch.load(p, map_location=\"cuda:1\")\n",
       "import torch\nt = torch.zeros(2, device='npu')\ns = torch.load(p, map_location=\"npu:1\")\n"},
      {"device_keyword_agnostic", A, "import torch\nt = torch.zeros(2, device=\"cuda:1\")\nu = x.to(\"cuda\")\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nt = torch.zeros(2, device=(f\"{_accel_device.type}:1\" if _accel_device.type != \"cpu\" else \"cpu\"))\nu = x.to(_accel_device.type)\n"},
      {"torch_device_call", A, "import torch\na = torch.device(\"cuda\", 1)\nb = torch.device(\"cuda:1\")\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\na = (torch.device(_accel_device.type, 1) if _accel_device.type != \"cpu\" else torch.device(\"cpu\"))\nb = torch.device((f\"{_accel_device.type}:1\" if _accel_device.type != \"cpu\" else \"cpu\"))\n"},
      {"set_default_device", N, "import torch\ntorch.set_default_device(\"cuda:0\")\n",
       "import torch\nimport torch_npu\ntorch.set_default_device(\"npu:0\")\n"},
      {"device_parameter_default", C, "def f(x, device=\"cuda\"):\n    return x\n",
       "def f(x, device=\"cpu\"):\n    return x\n"},
      {"fstring_device", N, "import torch\nt = x.to(f\"cuda:{rank}\")\n",
       "import torch\nt = x.to(f\"npu:{rank}\")\n"},
      {"device_assignment_agnostic", A, "import torch\ndevice = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")\ny = x.cuda()\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ndevice = torch.device(_accel_device.type if torch.accelerator.is_available() else \"cpu\")\ny = x.to(_accel_device)\n"},
      {"device_assignment_of_a_literal", A, "import torch\ndef f():\n    device = \"cuda\"\n    return device\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ndef f():\n    device = _accel_device.type\n    return device\n"},
      {"device_local_assigned_later_is_left", A, "import torch\ndef f():\n    m = Net().cuda()\n    device = 'cuda'\n    return m\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ndef f():\n    m = Net().to(_accel_device)\n    device = _accel_device.type\n    return m\n"},
      {"device_parameter_is_bound", A, "import torch\ndef f(x, device=None):\n    y = x.cuda()\n    device = y.device\n    return y\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ndef f(x, device=None):\n    y = x.to(_accel_device)\n    device = y.device\n    return y\n"},
      {"device_with_index_keeps_it", A, "import torch\ndef f(rank):\n    device = torch.device(\"cuda\", rank)\n    return device\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ndef f(rank):\n    device = (torch.device(_accel_device.type, rank) if _accel_device.type != \"cpu\" else torch.device(\"cpu\"))\n    return device\n"},
      {"device_fstring_definition", A, "import torch\ndef f(rank):\n    device = f\"cuda:{rank}\"\n    return device\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ndef f(rank):\n    device = (f\"cuda:{rank}\".replace(\"cuda\", _accel_device.type, 1) if _accel_device.type != \"cpu\" else \"cpu\")\n    return device\n"},
      {"module_use_before_module_device", A, "import torch\nx = y.cuda()\ndevice = torch.device(\"cuda\")\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nx = y.to(_accel_device)\ndevice = torch.device(_accel_device.type)\n"},
      {"nccl_npu", N, "import torch.distributed as dist\ndist.init_process_group(\"nccl\", rank=r)\n",
       "import torch.distributed as dist\nimport torch_npu\ndist.init_process_group(\"hccl\", rank=r)\n"},
      {"nccl_keyword_cpu", C, "dist.init_process_group(backend='nccl')\n",
       "dist.init_process_group(backend='gloo')\n"},
      {"nccl_agnostic", A, "import torch\nimport torch.distributed as dist\ndist.init_process_group(backend=\"nccl\")\n",
       "import torch\nimport torch.distributed as dist\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ndist.init_process_group(backend=torch.distributed.get_default_backend_for_device(_accel_device))\n"},
      {"is_nccl_available_npu", N, "import torch.distributed as dist\nok = dist.is_nccl_available()\n",
       "import torch.distributed as dist\nok = dist.is_backend_available(\"hccl\")\n"},
      {"profiler_activity_npu", N, "import torch\nacts = [torch.profiler.ProfilerActivity.CUDA]\n",
       "import torch\nacts = [torch.profiler.ProfilerActivity.PrivateUse1]\n"},
      {"profiler_activity_agnostic", A, "import torch\nfrom torch.profiler import ProfilerActivity\na = ProfilerActivity.CUDA\n",
       "import torch\nfrom torch.profiler import ProfilerActivity\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\na = getattr(ProfilerActivity, _accel_device.type.upper(), ProfilerActivity.CPU)\n"},
      {"definition_without_torch_import", A, "x.cuda()\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nx.to(_accel_device)\n"},
      {"definition_after_docstring", A, "\"\"\"Doc.\"\"\"\nx.cuda()\n",
       "\"\"\"Doc.\"\"\"\nimport torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nx.to(_accel_device)\n"},
      {"definition_after_commented_import", A, "import torch  # framework\n\nx.cuda()\n",
       "import torch  # framework\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\n\nx.to(_accel_device)\n"},
      {"definition_no_final_newline", A, "import torch\nx.cuda()",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nx.to(_accel_device)"},
      {"import_is_last_line_without_newline", N, "def f(y):\n    return y.cuda()\nimport torch",
       "def f(y):\n    return y.to(\"npu\")\nimport torch"},
      {"definition_before_first_module_level_use", A, "import torch\ny = x.cuda()\nimport os\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ny = x.to(_accel_device)\nimport os\n"},
      {"crlf_line_endings", N, "import torch\r\nx.cuda()\r\n",
       "import torch\r\nimport torch_npu\r\nx.to(\"npu\")\r\n"},
      {"utf8_bom", C, "\xef\xbb\xbfimport torch\nx.cuda()\n", "\xef\xbb\xbfimport torch\nx.to(\"cpu\")\n"},
      {"torch_npu_already_imported", N, "import torch\nimport torch_npu\nx.cuda()\n",
       "import torch\nimport torch_npu\nx.to(\"npu\")\n"},
      {"int_rank_to_agnostic", A, "import torch\ndef w(rank):\n    x = torch.ones(2).to(rank)\n    y = torch.zeros(2, device=rank)\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ndef w(rank):\n    x = torch.ones(2).to(torch.device(_accel_device.type, rank))\n    y = torch.zeros(2, device=torch.device(_accel_device.type, rank))\n"},
      {"int_rank_to_cpu", C, "def w(local_rank):\n    x = t.to(local_rank)\n",
       "def w(local_rank):\n    x = t.to(\"cpu\")\n"},
      {"int_variable_device", A, "import torch\ndevice = 0\nx = t.to(device)\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ndevice = 0\nx = t.to(torch.device(_accel_device.type, device))\n"},
      {"ddp_device_ids_agnostic", A, "import torch\nm = DDP(m, device_ids=[rank], output_device=rank)\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nm = DDP(m, device_ids=[rank] if _accel_device.type != \"cpu\" else None, output_device=rank if _accel_device.type != \"cpu\" else None)\n"},
      {"ddp_device_ids_cpu", C, "m = torch.nn.parallel.DistributedDataParallel(m, device_ids=[args.gpu])\n",
       "m = torch.nn.parallel.DistributedDataParallel(m, device_ids=None)\n"},
      {"format_index_agnostic", A, "import torch\nd = 'cuda:{}'.format(gpu)\ne = 'cuda:%d' % i\nx.to(d), y.to(e)\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nd = ('cuda:{}'.format(gpu).replace(\"cuda\", _accel_device.type, 1) if _accel_device.type != \"cpu\" else \"cpu\")\ne = (('cuda:%d' % i).replace(\"cuda\", _accel_device.type, 1) if _accel_device.type != \"cpu\" else \"cpu\")\nx.to(d), y.to(e)\n"},
      {"format_index_cpu", C, "d = torch.load(p, map_location='cuda:{}'.format(gpu))\n",
       "d = torch.load(p, map_location=\"cpu\")\n"},
      {"argparse_backend_default", A, "import torch\np.add_argument('--dist-backend', default='nccl', type=str)\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\np.add_argument('--dist-backend', default=torch.distributed.get_default_backend_for_device(_accel_device), type=str)\n"},
      {"argparse_backend_default_cpu", C, "p.add_argument('--dist-backend', default='nccl', type=str)\n",
       "p.add_argument('--dist-backend', default='gloo', type=str)\n"},
      {"dispatch_table_is_left", A, "import torch\nBACKENDS = {\"cuda\": \"nccl\", \"npu\": \"hccl\"}\nb = BACKENDS[\"cuda\"]\n",
       "import torch\nBACKENDS = {\"cuda\": \"nccl\", \"npu\": \"hccl\"}\nb = BACKENDS[\"cuda\"]\n"},
      {"cuda_guard_body_is_left", A, "import torch\ndef f(device):\n    if device.type == 'cuda':\n        assert torch.cuda.is_available()\n        torch.cuda.synchronize()\n",
       "import torch\ndef f(device):\n    if device.type == 'cuda':\n        assert torch.cuda.is_available()\n        torch.cuda.synchronize()\n"},
      {"cuda_device_argument", A, "import torch\nm2 = m.cuda(torch.device(\"cuda\"))\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nm2 = m.to(torch.device(_accel_device.type))\n"},
      {"device_type_derivation_npu", N, "device = 'cuda'\ndevice_type = 'cuda' if 'cuda' in device else 'cpu'\n",
       "device = 'npu'\ndevice_type = 'npu' if 'npu' in device else 'cpu'\n"},
      // `self.gpu_id = gpu_id` binds an attribute, not the parameter: gpu_id stays an index.
      {"attribute_target_keeps_parameter_kind", A,
       "import torch\nclass Trainer:\n    def __init__(self, model, gpu_id):\n        self.gpu_id = gpu_id\n        self.model = model.to(gpu_id)\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nclass Trainer:\n    def __init__(self, model, gpu_id):\n        self.gpu_id = gpu_id\n        self.model = model.to(torch.device(_accel_device.type, gpu_id))\n"},
      {"subscript_target_keeps_rank_kind", C, "def f(x, rank, seen):\n    seen[rank] = 1\n    return x.to(rank)\n",
       "def f(x, rank, seen):\n    seen[rank] = 1\n    return x.to(\"cpu\")\n"},
      // DeepSpeed's accelerator names its device string local_device ("cuda:0"): not an index.
      {"local_device_is_a_device_string", A, "import torch\ndef test(model, local_device):\n    return model(x.to(local_device))\n",
       "import torch\ndef test(model, local_device):\n    return model(x.to(local_device))\n"},
      // An index-named loop variable: on cpu every placement is "cpu"; elsewhere it is flagged.
      {"loop_rank_to_cpu", C, "for rank, x in enumerate(xs):\n    y = x.to(rank)\n",
       "for rank, x in enumerate(xs):\n    y = x.to(\"cpu\")\n"},
      {"loop_rank_to_agnostic_is_left", A, "import torch\nfor rank, x in enumerate(xs):\n    y = x.to(rank)\n",
       "import torch\nfor rank, x in enumerate(xs):\n    y = x.to(rank)\n"},
      // torch.load binds a map_location lambda's first parameter to a storage, whose .to() takes
      // the device only by keyword.
      {"map_location_storage_lambda_agnostic", A,
       "import torch\nck = torch.load(p, map_location=lambda storage, loc: storage.cuda(args.gpu))\nc2 = torch.load(p, lambda s, l: s.cuda())\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nck = torch.load(p, map_location=lambda storage, loc: storage.to(device=torch.device(_accel_device.type, args.gpu)))\nc2 = torch.load(p, lambda s, l: s.to(device=_accel_device))\n"},
      {"map_location_storage_lambda_cpu", C,
       "ck = torch.load(p, map_location=lambda storage, loc: storage.cuda(gpu))\nf = lambda t, l: t.cuda(1)\n",
       "ck = torch.load(p, map_location=lambda storage, loc: storage.to(device=\"cpu\"))\nf = lambda t, l: t.to(\"cpu\")\n"},
      {"map_location_storage_lambda_npu", N,
       "import torch\nck = torch.load(p, map_location=lambda storage, loc: storage.cuda(device=torch.device(\"cuda\", 0)))\n",
       "import torch\nck = torch.load(p, map_location=lambda storage, loc: storage.to(device=torch.device(\"npu\", 0)))\n"},
      {"stream_context_agnostic", A, "import torch\ns = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n    pass\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ns = torch.get_device_module(_accel_device).Stream()\nwith torch.get_device_module(_accel_device).stream(s):\n    pass\n"},
      {"stream_context_cpu", C, "import torch\nwith torch.cuda.stream(s):\n    pass\n",
       "import torch\nwith torch.cpu.stream(s):\n    pass\n"},
      // In a type annotation the class is only named: torch.amp.GradScaler is its base class.
      {"gradscaler_annotation", A,
       "import torch\ndef run(scaler: Optional[torch.cuda.amp.GradScaler] = None) -> torch.cuda.amp.GradScaler:\n    return scaler\n",
       "import torch\ndef run(scaler: Optional[torch.amp.GradScaler] = None) -> torch.amp.GradScaler:\n    return scaler\n"},
      {"gradscaler_imported_annotation", C,
       "from torch.cuda.amp import GradScaler\ndef run(scaler: GradScaler):\n    return GradScaler()\n",
       "from torch.amp import GradScaler\ndef run(scaler: GradScaler):\n    return GradScaler(device=\"cpu\")\n"},
      // torch.amp.custom_fwd/custom_bwd require device_type: the deprecated torch.cuda.amp ones
      // are those with device_type="cuda".
      {"custom_fwd_bwd_cpu", C,
       "import torch\n@torch.cuda.amp.custom_fwd\ndef f(x):\n    return x\n@torch.cuda.amp.custom_bwd()\ndef g(x):\n    return x\n"
       "h = torch.cuda.amp.custom_fwd(f, cast_inputs=torch.float16,)\n",
       "import torch\n@torch.amp.custom_fwd(device_type=\"cpu\")\ndef f(x):\n    return x\n@torch.amp.custom_bwd(device_type=\"cpu\")\ndef g(x):\n    return x\n"
       "h = torch.amp.custom_fwd(f, cast_inputs=torch.float16, device_type=\"cpu\",)\n"},
      {"custom_fwd_imported_agnostic", A,
       "import torch\nfrom torch.cuda.amp import custom_fwd, custom_bwd as cb\n@custom_fwd(cast_inputs=torch.float32)\ndef f(x):\n"
       "    return x\n@cb\ndef g(x):\n    return x\n",
       "import torch\nfrom torch.amp import custom_fwd, custom_bwd as cb\n" + kDefinition +
       "@custom_fwd(cast_inputs=torch.float32, device_type=_accel_device.type)\ndef f(x):\n    return x\n"
       "@cb(device_type=_accel_device.type)\ndef g(x):\n    return x\n"},
      // torch.accelerator.memory.* take the device positionally only.
      {"memory_device_keyword_agnostic", A, "import torch\nm = torch.cuda.max_memory_allocated(device=d)\nr = torch.cuda.memory_reserved(device = d)\n",
       "import torch\nm = torch.accelerator.memory.max_memory_allocated(d)\nr = torch.accelerator.memory.memory_reserved(d)\n"},
      // torch.distributed.Backend lower-cases its name.
      {"nccl_upper_case_cpu", C, "import torch.distributed as dist\ndist.init_process_group(backend=\"NCCL\" if ok else \"GLOO\")\n",
       "import torch.distributed as dist\ndist.init_process_group(backend=\"gloo\" if ok else \"GLOO\")\n"},
      {"npu_import_in_entry_file", N, "import torch\nx = t.cuda()\nif __name__ == \"__main__\":\n    main()\n",
       "import torch\nimport torch_npu\nx = t.to(\"npu\")\nif __name__ == \"__main__\":\n    main()\n"},
      // Pinned memory raises without an accelerator; npu keeps it (torch_npu pins for the NPU).
      {"pin_memory_statement_agnostic", A, "import torch\ndef f(ema):\n    ema.pin_memory()  # faster copies\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\ndef f(ema):\n    if _accel_device.type != \"cpu\": ema.pin_memory()  # faster copies\n"},
      {"pin_memory_statement_cpu", C, "import torch\ndef f(ema):\n    ema.pin_memory()\n    return ema\n",
       "import torch\ndef f(ema):\n    pass\n    return ema\n"},
      {"pin_memory_fresh_tensor_agnostic", A, "import torch\nbuf = torch.zeros(8).pin_memory()\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nbuf = (torch.zeros(8).pin_memory() if _accel_device.type != \"cpu\" else torch.zeros(8))\n"},
      {"pin_memory_fresh_tensor_cpu", C, "import torch\nbuf = torch.empty(8, dtype=torch.uint8).pin_memory()\n",
       "import torch\nbuf = torch.empty(8, dtype=torch.uint8)\n"},
      {"pin_memory_npu_is_kept", N, "import torch\nbuf = torch.zeros(8).pin_memory()\nb = torch.empty(2, pin_memory=True)\n",
       "import torch\nbuf = torch.zeros(8).pin_memory()\nb = torch.empty(2, pin_memory=True)\n"},
      {"pin_memory_factory_keyword_agnostic", A, "import torch\nb = torch.empty(2, pin_memory=True)\nc = x.new_zeros(2, pin_memory=True)\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nb = torch.empty(2, pin_memory=_accel_device.type != \"cpu\")\nc = x.new_zeros(2, pin_memory=_accel_device.type != \"cpu\")\n"},
      {"pin_memory_factory_keyword_cpu", C, "import torch\nb = torch.empty(2, pin_memory=True)\n",
       "import torch\nb = torch.empty(2, pin_memory=False)\n"},
      {"pin_memory_data_loader_is_left", C, "import torch\nl = torch.utils.data.DataLoader(ds, pin_memory=True)\nm = DataLoader(ds, pin_memory=True)\n",
       "import torch\nl = torch.utils.data.DataLoader(ds, pin_memory=True)\nm = DataLoader(ds, pin_memory=True)\n"},
      {"pin_memory_already_guarded", A, "import torch\nif torch.accelerator.is_available():\n    b = b.pin_memory()\nc = t.pin_memory() if torch.accelerator.is_available() else t\n",
       "import torch\nif torch.accelerator.is_available():\n    b = b.pin_memory()\nc = t.pin_memory() if torch.accelerator.is_available() else t\n"},
      // Backend.NCCL is "nccl" where it names a backend.
      {"backend_nccl_constant_npu", N, "import torch.distributed as dist\ndist.init_process_group(backend=dist.Backend.NCCL)\n",
       "import torch.distributed as dist\nimport torch_npu\ndist.init_process_group(backend=\"hccl\")\n"},
      // A guard whose body keeps a flagged CUDA call stays a CUDA guard.
      {"guard_with_flagged_body_is_kept", A, "import torch\nif torch.cuda.is_available():\n    state = torch.cuda.get_rng_state()\nok = torch.cuda.is_available()\n",
       "import torch\nif torch.cuda.is_available():\n    state = torch.cuda.get_rng_state()\nok = torch.accelerator.is_available()\n"},
      {"guard_with_rewritten_body_is_rewritten", A, "import torch\nif torch.cuda.is_available() and n > 0:\n    torch.cuda.synchronize()\n",
       "import torch\n_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\nif torch.accelerator.is_available() and n > 0:\n    torch.get_device_module(_accel_device).synchronize()\n"},
      {"guard_conditional_with_flagged_branch_is_kept", N, "import torch\nc = torch.cuda.get_device_capability() if torch.cuda.is_available() else None\n",
       "import torch\nc = torch.cuda.get_device_capability() if torch.cuda.is_available() else None\n"},
      {"flagged_call_keeps_its_arguments", A, "import torch\np = torch.cuda.get_device_properties(\"cuda:{}\".format(i))\n",
       "import torch\np = torch.cuda.get_device_properties(\"cuda:{}\".format(i))\n"},
  };
}

class RuleFixture : public ::testing::TestWithParam<Fixture> {};

TEST_P(RuleFixture, RewritesExactlyAndIsIdempotent) {
  const Fixture& f = GetParam();
  FileMigration first = migrate_source("f.py", f.input, f.target);
  ASSERT_NE(first.status, FileStatus::SyntaxError) << first.detail;
  ASSERT_NE(first.status, FileStatus::RewriteFailed) << first.detail;
  std::string output = first.status == FileStatus::Migrated ? first.migrated : f.input;
  EXPECT_EQ(output, f.expected);

  FileMigration second = migrate_source("f.py", output, f.target);
  EXPECT_EQ(second.status, FileStatus::Unchanged) << "second run changed:\n" << second.migrated;
  EXPECT_TRUE(second.changes.empty());
}

INSTANTIATE_TEST_SUITE_P(Rules, RuleFixture, ::testing::ValuesIn(fixtures()),
                         [](const ::testing::TestParamInfo<Fixture>& info) { return std::string(info.param.name); });

}  // namespace
