#include "tools/migrate/rule_table.h"

#include <stdexcept>

namespace crosstrain::migrate {

namespace {

constexpr RuleAction W = RuleAction::Rewrite;
constexpr RuleAction R = RuleAction::Report;

const std::array<TargetSpec, kTargetCount> kTargets = {{
    {Target::DeviceAgnostic, "_accel_device", "_accel_device.type", "{torch}.device(_accel_device.type, {index})",
     "{torch}.distributed.get_default_backend_for_device(_accel_device)",
     "runs on whatever accelerator torch.accelerator finds, else the CPU"},
    {Target::Npu, "\"npu\"", "\"npu\"", "{torch}.device(\"npu\", {index})", "\"hccl\"",
     "Ascend NPUs through torch_npu"},
    {Target::Cpu, "\"cpu\"", "\"cpu\"", "\"cpu\"", "\"gloo\"", "the CPU only"},
}};

// Rows are grouped by family. Ids starting with "torch." are matched against attribute chains
// `torch.<path>` (longest dotted prefix wins); the others are matched by code shape in rewriter.cpp.
const std::vector<Rule> kRules = {
    // --- device placement ---------------------------------------------------------------------
    {"tensor.cuda", "device-placement", "`<expr>.cuda()`, `.cuda(i)`, `.cuda(device=i, non_blocking=b)` on any expression", W,
     {".to({device})", ".to({device})", ".to({device})"},
     "no argument: the current device, as .to(\"cuda\"); an int i: the target's device at i; a device d: .to(d); "
     "an argument of unknown kind is flagged (int-device); on cpu every form becomes .to(\"cpu\")"},
    {"device-string", "device-string", "\"cuda\" passed as a device: device= (and any keyword named *device*: use_device=, "
     "...), map_location=, `.to(...)`, `set_device(...)`, a value or default of a name, attribute or config key *device*, "
     "the return value of a function named *device*, the default of an argparse option (or absl `flags.DEFINE_*` flag) "
     "named *device*, the value of a name that the same scope reads in one of these positions (`dev = \"cuda\"; "
     "x.to(dev)`) (not in comparisons, dictionary keys, subscripts, choices=)", W,
     {"{device_type}", "{device_type}", "{device_type}"},
     "a string stays a string: the target's device type, which is \"cuda\" wherever CUDA is the device"},
    {"device-type-string", "device-string", "\"cuda\" passed as a device type: device_type=, `torch.autocast(\"cuda\")`, "
     "`GradScaler(\"cuda\")`, `init_device_mesh(\"cuda\", ...)`, the type in `torch.device(\"cuda\", i)`", W,
     {"{device_type}", "{device_type}", "{device_type}"}, "device type replaced by the target's"},
    {"device-definition", "device-string", "inserted once before the first module-level statement that uses `_accel_device` (device-agnostic only); "
     "after a conditional `import torch` (try/if) and guarded by `globals().get(\"torch\") is not None`", W,
     {"_accel_device = {torch}.accelerator.current_accelerator() if {torch}.accelerator.is_available() else {torch}.device(\"cpu\")", "", ""},
     "the one device, chosen once at import; edit it to pin a device"},
    {"import-torch-npu", "device-placement", "`import torch_npu` inserted once after `import torch` in a file that runs as a program "
     "(a `__main__` guard or module-level calls; npu only)", W,
     {"", "import torch_npu", ""}, "torch_npu registers the NPU device with PyTorch"},
    // --- torch.cuda device API --------------------------------------------------------------------
    {"torch.cuda.is_available", "device-api", "`torch.cuda.is_available`", W,
     {"{torch}.accelerator.is_available", "{torch}.npu.is_available", "{keep}"},
     "on cpu it stays: it answers False on a CPU-only machine (torch.cpu.is_available() would answer True)"},
    {"torch.cuda.device_count", "device-api", "`torch.cuda.device_count`", W,
     {"{torch}.accelerator.device_count", "{torch}.npu.device_count", "{keep}"},
     "rewritten where it is tested (n > 0, if n:); a count used as a number is 0 without an accelerator and is flagged"},
    {"torch.cuda.current_device", "device-api", "`torch.cuda.current_device`", W,
     {"", "{torch}.npu.current_device", ""},
     "torch.cpu.current_device() returns the string 'cpu', not an index: use _accel_device (or its index) instead"},
    {"torch.cuda.set_device", "device-api", "`torch.cuda.set_device`", W,
     {"{torch}.get_device_module({device}).set_device", "{torch}.npu.set_device", "{torch}.cpu.set_device"},
     "on device-agnostic the module of `device` answers (torch.accelerator.set_device_index raises without an accelerator)"},
    {"torch.cuda.synchronize", "device-api", "`torch.cuda.synchronize`", W,
     {"{torch}.get_device_module({device}).synchronize", "{torch}.npu.synchronize", "{torch}.cpu.synchronize"},
     "on device-agnostic the module of `device` answers (torch.accelerator.synchronize raises without an accelerator)"},
    {"torch.cuda.current_stream", "stream", "`torch.cuda.current_stream`", W,
     {"{torch}.get_device_module({device}).current_stream", "{torch}.npu.current_stream", "{torch}.cpu.current_stream"},
     "on device-agnostic the module of `device` answers, so the CPU fallback works too"},
    {"torch.cuda.Stream", "stream", "`torch.cuda.Stream`", W,
     {"{torch}.get_device_module({device}).Stream", "{torch}.npu.Stream", "{torch}.cpu.Stream"},
     "a stream of `device`'s module (torch.Stream() without a device raises when no accelerator is present)"},
    {"torch.cuda.stream", "stream", "`torch.cuda.stream(s)`, the context that makes s current", W,
     {"{torch}.get_device_module({device}).stream", "{torch}.npu.stream", "{torch}.cpu.stream"},
     "the stream context of the device's module (torch.cpu.stream takes a torch.cpu.Stream, or None)"},
    {"torch.cuda.Event", "stream", "`torch.cuda.Event`", W,
     {"{torch}.get_device_module({device}).Event", "{torch}.npu.Event", "{torch}.cpu.Event"},
     "an event of the device's module; with enable_timing=True it is flagged instead (a CPU event does not time)"},
    {"torch.cuda.manual_seed", "random", "`torch.cuda.manual_seed`", W,
     {"{keep}", "{torch}.npu.manual_seed", "{keep}"},
     "kept on device-agnostic and cpu: it is valid without CUDA (ignored), and torch.manual_seed would reseed the CPU too"},
    {"torch.cuda.manual_seed_all", "random", "`torch.cuda.manual_seed_all`", W,
     {"{keep}", "{torch}.npu.manual_seed_all", "{keep}"},
     "kept on device-agnostic and cpu: it is valid without CUDA (ignored), and torch.manual_seed would reseed the CPU too"},
    {"torch.cuda.empty_cache", "memory", "`torch.cuda.empty_cache`", W,
     {"{torch}.accelerator.memory.empty_cache", "{torch}.npu.empty_cache", "{keep}"}, ""},
    {"torch.cuda.memory_allocated", "memory", "`torch.cuda.memory_allocated`", W,
     {"{torch}.accelerator.memory.memory_allocated", "{torch}.npu.memory_allocated", "{keep}"}, ""},
    {"torch.cuda.max_memory_allocated", "memory", "`torch.cuda.max_memory_allocated`", W,
     {"{torch}.accelerator.memory.max_memory_allocated", "{torch}.npu.max_memory_allocated", "{keep}"}, ""},
    {"torch.cuda.memory_reserved", "memory", "`torch.cuda.memory_reserved`", W,
     {"{torch}.accelerator.memory.memory_reserved", "{torch}.npu.memory_reserved", "{keep}"}, ""},
    {"torch.cuda.max_memory_reserved", "memory", "`torch.cuda.max_memory_reserved`", W,
     {"{torch}.accelerator.memory.max_memory_reserved", "{torch}.npu.max_memory_reserved", "{keep}"}, ""},
    {"torch.cuda.reset_peak_memory_stats", "memory", "`torch.cuda.reset_peak_memory_stats`", W,
     {"", "{torch}.npu.reset_peak_memory_stats", ""},
     "torch.accelerator.memory.reset_peak_memory_stats raises without an accelerator: call it under `if torch.accelerator.is_available():` "
     "(as a statement it is guarded: diagnostic-guard)"},
    {"torch.cuda.memory_stats", "memory", "`torch.cuda.memory_stats`", W,
     {"{torch}.accelerator.memory.memory_stats", "{torch}.npu.memory_stats", "{keep}"}, ""},
    {"diagnostic-guard", "memory", "a torch.cuda call that only reports or resets counters (memory_summary, memory_snapshot, "
     "get_device_name, get_device_properties, get_device_capability, mem_get_info, utilization, temperature, power_draw, "
     "clock_rate, list_gpu_processes, memory_cached, reset_peak_memory_stats, reset_accumulated_memory_stats, ...) whose "
     "value is printed or logged (print/logging/write, an f-string without format spec, str() of them) or dropped", W,
     {"`(torch.get_device_module(_accel_device).<name>(...) if hasattr(torch.get_device_module(_accel_device), \"<name>\") "
      "else \"n/a\")` (`else None` for a statement)",
      "`torch.npu.<name>(...)` where torch_npu has it (torch.npu.memory_summary, torch.npu.memory_snapshot, "
      "torch.npu.memory_stats_as_nested_dict, torch.npu.get_device_name, torch.npu.get_device_properties, "
      "torch.npu.get_device_capability, torch.npu.mem_get_info, torch.npu.utilization, torch.npu.memory_cached, "
      "torch.npu.max_memory_cached, torch.npu.reset_peak_memory_stats, torch.npu.reset_max_memory_allocated, "
      "torch.npu.reset_max_memory_cached, torch.npu.reset_accumulated_memory_stats), else "
      "`(torch.npu.<name>(...) if hasattr(torch.npu, \"<name>\") else \"n/a\")`",
      "`(torch.cpu.<name>(...) if hasattr(torch.cpu, \"<name>\") else \"n/a\")`: \"n/a\" (None for a statement)"},
     "guarded: the program keeps running where the device module lacks the call; on CUDA it is the same call"},
    // --- mixed precision ------------------------------------------------------------------------
    {"torch.cuda.amp.autocast", "amp", "`torch.cuda.amp.autocast(...)` (and `autocast` imported from torch.cuda.amp)", W,
     {"{torch}.amp.autocast", "{torch}.amp.autocast", "{torch}.amp.autocast"},
     "device_type added; positional enabled/dtype/cache_enabled become keywords"},
    {"torch.cuda.amp.GradScaler", "amp", "`torch.cuda.amp.GradScaler(...)` (and `GradScaler` imported from torch.cuda.amp)", W,
     {"{torch}.amp.GradScaler", "{torch}.amp.GradScaler", "{torch}.amp.GradScaler"},
     "device added as the first argument"},
    {"torch.cuda.amp.custom_fwd", "amp", "`torch.cuda.amp.custom_fwd` (and `custom_fwd` imported from torch.cuda.amp) as a "
     "decorator or call", W,
     {"{torch}.amp.custom_fwd", "{torch}.amp.custom_fwd", "{torch}.amp.custom_fwd"},
     "device_type added as a keyword (torch.amp.custom_fwd requires it); a bare decorator is called with it"},
    {"torch.cuda.amp.custom_bwd", "amp", "`torch.cuda.amp.custom_bwd` (and `custom_bwd` imported from torch.cuda.amp) as a "
     "decorator or call", W,
     {"{torch}.amp.custom_bwd", "{torch}.amp.custom_bwd", "{torch}.amp.custom_bwd"},
     "device_type added as a keyword (torch.amp.custom_bwd requires it); a bare decorator is called with it"},
    {"torch.cuda.amp", "amp", "`from torch.cuda.amp import ...` (autocast, GradScaler, custom_fwd, custom_bwd)", W,
     {"{torch}.amp", "{torch}.amp", "{torch}.amp"},
     "torch.amp's autocast needs device_type and its GradScaler a device; calls of imported names get them"},
    {"amp-module", "amp", "`torch.cuda.amp` as a module value (`amp = torch.cuda.amp`, `hasattr(torch.cuda.amp, ...)`) "
     "or any attribute of it other than autocast, GradScaler, custom_fwd, custom_bwd (`torch.cuda.amp.common`)", R,
     {"torch.amp is another module (its autocast needs device_type; torch.cuda.amp.common has no counterpart): name "
      "torch.amp.autocast(device_type=_accel_device.type, ...) / torch.amp.GradScaler(_accel_device.type, ...) where used",
      "torch.amp is another module (its autocast needs device_type): name torch.amp.autocast(device_type=\"npu\", ...) / "
      "torch.amp.GradScaler(\"npu\", ...) where used",
      "torch.amp is another module (its autocast needs device_type): name torch.amp.autocast(device_type=\"cpu\", ...) / "
      "torch.amp.GradScaler(\"cpu\", ...) where used"}, ""},
    // --- distributed and profiler ---------------------------------------------------------------
    {"nccl-backend", "distributed", "\"nccl\" (any case) as backend=, the first argument of init_process_group/new_group, "
     "the value of a name, attribute or config key named *backend* (or of a name read in one of these positions), the "
     "default of an argparse option or absl flag named *backend*", W,
     {"{backend}", "{backend}", "{backend}"}, "collective backend of the target"},
    {"is_nccl_available", "distributed", "`is_nccl_available()` on any module", W,
     {"is_backend_available({backend})", "is_backend_available({backend})", "is_backend_available({backend})"}, ""},
    {"profiler-activity", "profiler", "`ProfilerActivity.CUDA` (any prefix)", W,
     {"getattr({prefix}, _accel_device.type.upper(), {prefix}.CPU)", "{prefix}.PrivateUse1", "{prefix}.CPU"},
     "activity of the target device; Ascend's torch_npu.profiler gives richer NPU traces"},
    {"pin-memory", "pinned-memory", "`.pin_memory()` as a statement or on a tensor a torch factory has just made; "
     "`pin_memory=True` in a torch factory (`torch.empty(..., pin_memory=True)`, `x.new_zeros(...)`)", W,
     {"pinned only where `_accel_device.type != \"cpu\"`: `if ...: x.pin_memory()`, "
      "`(torch.zeros(n).pin_memory() if ... else torch.zeros(n))`, `pin_memory=_accel_device.type != \"cpu\"`",
      "{keep}", "the pin dropped: `pass` (or the receiver) for a statement, `torch.zeros(n)`, `pin_memory=False`"},
     "pinning needs an accelerator: without one it raises; on the CPU a tensor that was never shared needs no pinned "
     "copy (DataLoader(pin_memory=True) only warns and is left alone)"},
    // --- reported: needs a human ----------------------------------------------------------------
    {"torch.backends.cudnn", "cudnn", "`torch.backends.cudnn.*` settings", R,
     {"harmless on other devices (ignored there); keep it or drop it",
      "harmless on NPU (ignored); keep it or drop it", "harmless on CPU (ignored); keep it or drop it"}, ""},
    {"torch.backends.cuda", "cuda-backends", "`torch.backends.cuda.*` settings (`matmul.allow_tf32`, SDPA kernel switches)", R,
     {"harmless on other devices (ignored there); keep it or drop it",
      "harmless on NPU (ignored); keep it or drop it", "harmless on CPU (ignored); keep it or drop it"}, ""},
    {"torch.autograd.profiler.emit_nvtx", "nvtx", "`torch.autograd.profiler.emit_nvtx`", R,
     {"raises without CUDA (NVTX needs the NVIDIA driver): use torch.profiler.profile with record_function ranges",
      "NVTX is CUDA-only: use torch_npu.profiler or torch.profiler.profile with ProfilerActivity.PrivateUse1",
      "raises without CUDA: drop it, or use torch.profiler.profile"}, ""},
    {"pin-memory-unproven", "pinned-memory", "`.pin_memory()` whose result is used, on an object of unknown origin; "
     "`pin_memory=<expression>` in a torch factory", R,
     {"raises without an accelerator: pin only where one exists (`x.pin_memory() if _accel_device.type != \"cpu\" else x`, "
      "`pin_memory=_accel_device.type != \"cpu\"`) if nothing relies on the pinned result being a new copy",
      "not flagged on npu: torch_npu pins host memory for the NPU",
      "raises on a CPU-only machine: drop the pin (`x` instead of `x.pin_memory()`, pin_memory=False) if nothing relies on "
      "the result being a new copy"}, ""},
    {"nccl-test", "distributed", "a comparison with the NCCL backend (`dist.get_backend() == \"nccl\"`, `== Backend.NCCL`)", R,
     {"not flagged: the test is right on CUDA and false on the CPU, where Gloo runs",
      "the test is False under HCCL, so the other path runs there: test for \"hccl\" as well",
      "the test is False under Gloo, so the other path runs: check that path is meant for Gloo"}, ""},
    {"nccl-string", "distributed", "\"nccl\" outside a backend position (not backend=, the first argument of "
     "init_process_group/new_group, a name, key or argparse option *backend*), in a position that is not text "
     "(messages, paths), a test or a table: `BACKENDS = [\"nccl\", \"gloo\"]`, `f(\"nccl\")`", R,
     {"check how the string is used: where it becomes a backend, write "
      "torch.distributed.get_default_backend_for_device(_accel_device)",
      "check how the string is used: the NPU's backend is \"hccl\"",
      "check how the string is used: the CPU's backend is \"gloo\""}, ""},
    {"torch.cuda.nvtx", "nvtx", "`torch.cuda.nvtx.*` ranges", R,
     {"use torch.profiler.record_function for ranges every backend understands",
      "use torch.profiler.record_function or torch_npu's mstx ranges",
      "use torch.profiler.record_function"}, ""},
    {"torch.cuda.graphs", "cuda-graphs", "`torch.cuda.graphs`", R,
     {"CUDA graphs have no device-generic API: guard with a device check or use torch.compile",
      "use torch_npu's NPU graph (torch.npu.NPUGraph) or torch.compile", "no graph capture on CPU: remove it"}, ""},
    {"torch.cuda.CUDAGraph", "cuda-graphs", "`torch.cuda.CUDAGraph`", R,
     {"CUDA graphs have no device-generic API: guard with a device check or use torch.compile",
      "use torch.npu.NPUGraph (torch_npu) or torch.compile", "no graph capture on CPU: remove it"}, ""},
    {"torch.cuda.graph", "cuda-graphs", "`torch.cuda.graph`", R,
     {"CUDA graphs have no device-generic API: guard with a device check or use torch.compile",
      "use torch.npu.graph (torch_npu) or torch.compile", "no graph capture on CPU: remove it"}, ""},
    {"torch.cuda.make_graphed_callables", "cuda-graphs", "`torch.cuda.make_graphed_callables`", R,
     {"no device-generic equivalent: guard with a device check",
      "no NPU equivalent in this table: guard with a device check", "remove it on CPU"}, ""},
    {"torch.cuda", "device-api", "any other `torch.cuda.*` reference", R,
     {"no device-generic equivalent in the rule table: port by hand",
      "look for the torch.npu counterpart (torch_npu mirrors most of torch.cuda)",
      "no CPU equivalent in the rule table: port by hand"}, ""},
    {"torch-cuda-store", "device-api", "an assignment to (or `del` of) a `torch.cuda` attribute: `torch.cuda.synchronize = f`, "
     "`torch.cuda.amp = m`, `torch.cuda.amp.common.x = v` (a patch of torch.cuda)", R,
     {"a patch of torch.cuda: renamed, it would patch the device's module (torch.cpu without an accelerator) for the "
      "whole process: patch torch.get_device_module(_accel_device) deliberately, or drop the patch",
      "a patch of torch.cuda: renamed, it would patch torch.npu for the whole process: patch torch.npu deliberately, "
      "or drop the patch",
      "a patch of torch.cuda: renamed, it would patch torch.cpu for the whole process: drop it, or patch torch.cpu "
      "deliberately"}, ""},
    {"cuda-env", "device-api", "the environment variable names \"PYTORCH_CUDA_ALLOC_CONF\", \"CUDA_LAUNCH_BLOCKING\", "
     "\"CUDA_DEVICE_MAX_CONNECTIONS\" (set, read or tested); a note, not a --check failure: the program runs without them", R,
     {"only CUDA reads it: PYTORCH_ALLOC_CONF is the allocator setting every device reads (torch 2.11); "
      "CUDA_LAUNCH_BLOCKING and CUDA_DEVICE_MAX_CONNECTIONS have no device-generic name",
      "torch_npu reads PYTORCH_NPU_ALLOC_CONF (or PYTORCH_ALLOC_CONF) for the allocator and ASCEND_LAUNCH_BLOCKING for "
      "synchronous launches; CUDA_DEVICE_MAX_CONNECTIONS has no torch_npu counterpart",
      "only CUDA reads it: harmless on the CPU (ignored); keep it or drop it"}, ""},
    {"cuda-visible-devices", "device-api", "the environment variable name \"CUDA_VISIBLE_DEVICES\" (set, read or tested)", R,
     {"only CUDA reads it: another accelerator sees every device (Ascend reads ASCEND_RT_VISIBLE_DEVICES); "
      "choose the device by index (torch.device(_accel_device.type, local_rank)) instead",
      "torch_npu reads ASCEND_RT_VISIBLE_DEVICES, not CUDA_VISIBLE_DEVICES: set or read that one",
      "only CUDA reads it: on the CPU it selects nothing; drop it, and count processes another way"}, ""},
    {"legacy-tensor-type", "device-placement", "`x.type(torch.cuda.HalfTensor)`, `x.type(\"torch.cuda.FloatTensor\")` (any legacy "
     "CUDA tensor type, positional or dtype=); `torch.set_default_tensor_type(<CUDA floating type>)` as a statement, in a file "
     "that does not call the legacy `torch.Tensor(...)` constructor", W,
     {"`x.type({torch}.<dtype>).to({device})`; `{torch}.set_default_dtype({torch}.<dtype>); {torch}.set_default_device({device})`",
      "`x.type({torch}.<dtype>).to({device})`; `{torch}.set_default_dtype({torch}.<dtype>); {torch}.set_default_device({device})`",
      "`x.type({torch}.<dtype>).to({device})`; `{torch}.set_default_dtype({torch}.<dtype>); {torch}.set_default_device({device})`"},
     "the cast of .type() (every parameter and buffer of a module), then the move .cuda() makes; set_default_device places "
     "what the factories make, as the CUDA default type did"},
    {"legacy-tensor-type-unproven", "device-placement", "a legacy CUDA tensor type's name (\"torch.cuda.FloatTensor\") "
     "anywhere else: kept in a name, `set_default_tensor_type` in a file that calls `torch.Tensor(...)`, `.type()` with "
     "more arguments", R,
     {"raises without CUDA: cast with .to(dtype=...) and place with .to(_accel_device); for the default type, "
      "torch.set_default_dtype + torch.set_default_device(_accel_device) and torch.empty/torch.tensor instead of "
      "torch.Tensor(...), which set_default_device does not place",
      "torch_npu's types are torch.npu.*Tensor: prefer .to(dtype=..., device=\"npu\"), and torch.set_default_dtype + "
      "torch.set_default_device(\"npu\") with torch.empty/torch.tensor instead of torch.Tensor(...)",
      "raises without CUDA: use the CPU type (torch.FloatTensor) or .to(dtype=...)"}, ""},
    {"cuda-string", "device-string", "\"cuda\" / \"cuda:N\" (or 'cuda:{}'.format(i), f\"cuda:{i}\") outside a device "
     "position, where it may still become a device: the value of a name that is not read as a device here "
     "(`name = \"cuda\"`), an argument of another function (`f(\"cuda\")`), a tuple or list of them (not in "
     "comparisons, tables, choices=, messages, paths, attribute names given to getattr/hasattr/setattr/delattr, class "
     "attributes such as Enum members, which are left alone unflagged); a \"cuda:\" prefix or template kept apart from its index (`prefix = \"cuda:\"`); a string built with a \"cuda\" piece outside a device position (`str(i) + \"cuda\"`, `name = \"{}:{}\".format(\"cuda\", i)`)", R,
     {"check how the string is used; compare against device.type instead",
      "check how the string is used; \"npu\" is the NPU device type", "check how the string is used"}, ""},
    {"int-device", "device-placement", "an integer used as a device: `device = 0`, `.cuda(x)` / `.to(x)` where x may be an int", R,
     {"an int device means a CUDA index: write torch.device(_accel_device.type, i), or _accel_device",
      "an int device means an NPU index under torch_npu: write torch.device(\"npu\", i)",
      "an int device means a CUDA index: write \"cpu\""}, ""},
    {"device-count-number", "device-api", "`torch.cuda.device_count()` used as a number that is not a process count "
     "(device lists, batch arithmetic, a count stored in an attribute)", R,
     {"0 without an accelerator: what it sizes is empty there (mp.spawn(nprocs=0) starts no worker and the program "
      "ends having trained nothing); use max(1, torch.accelerator.device_count()) where it counts processes",
      "0 where no NPU is visible: use max(1, torch.npu.device_count()) where it counts processes",
      "0 on a CPU: what it sizes is empty (mp.spawn(nprocs=0) starts no worker and the program ends having trained "
      "nothing); use a process count from the command line (e.g. 1 or 2)"}, ""},
    {"process-count", "device-api", "`torch.cuda.device_count()` that becomes a process count: `nprocs=`, a world size, "
     "`range()` of processes, a divisor (`rank % n`), directly or through a name of its scope", W,
     {"max(1, {torch}.accelerator.device_count())", "max(1, {torch}.npu.device_count())", "max(1, {torch}.cuda.device_count())"},
     "at least one process: unchanged wherever a device is visible; without one the program runs one process "
     "instead of none (or a division by zero)"},
    {"sync-batchnorm", "distributed", "`nn.SyncBatchNorm.convert_sync_batchnorm(m)` of a module named by a plain name "
     "or attribute", W,
     {"`(<call> if _accel_device.type != \"cpu\" else m)`", "{keep}", "`m`: plain BatchNorm"},
     "SyncBatchNorm needs an accelerator: DDP over CPU modules raises \"SyncBatchNorm layers only work with GPU "
     "modules\"; on the CPU the module keeps its BatchNorm layers"},
    {"sync-batchnorm-unproven", "distributed", "`convert_sync_batchnorm(<expression>)` whose argument is not a plain name", R,
     {"SyncBatchNorm raises under DDP on the CPU: convert only where `_accel_device.type != \"cpu\"`",
      "not flagged on npu: torch_npu runs SyncBatchNorm",
      "SyncBatchNorm raises under DDP on the CPU: drop the conversion"}, ""},
    {"cuda-branch-cpu-tensors", "device-string", "a CUDA test (`x.is_cuda`, `x.device.type == \"cuda\"`) whose other branch "
     "makes CPU tensors (`torch.FloatTensor`, a factory without device=, `.cpu()`)", R,
     {"on another accelerator the test is False and the other branch puts CPU tensors next to x on that device: "
      "build them on x's device (torch.zeros(..., device=x.device), x.new_zeros(...))",
      "False on the NPU: the other branch puts CPU tensors next to x on the NPU: build them on x's device "
      "(torch.zeros(..., device=x.device), x.new_zeros(...))",
      "not flagged: on the CPU the other branch is the one meant to run"}, ""},
    {"event-timing", "stream", "`torch.cuda.Event(enable_timing=True)` and `elapsed_time`", R,
     {"CPU events do not time: measure with time.perf_counter() around torch.get_device_module(_accel_device).synchronize()",
      "not flagged on npu: torch.npu.Event(enable_timing=True) times on the NPU",
      "CPU events do not time: measure with time.perf_counter() around the work"}, ""},
    {"amp-reference", "amp", "`torch.cuda.amp.autocast` / `GradScaler` / `custom_fwd` / `custom_bwd` referenced, not called", R,
     {"torch.amp.autocast needs device_type: use functools.partial(torch.autocast, _accel_device.type)",
      "use functools.partial(torch.autocast, \"npu\")", "use functools.partial(torch.autocast, \"cpu\")"}, ""},
    {"cuda-test", "device-string", "a comparison with \"cuda\" (`device.type == 'cuda'`, `'cuda' in device`)", R,
     {"not flagged: the test is right on CUDA and false on the CPU, where the other path is meant to run",
      "the test is False on the NPU, so the CPU path runs there: test for \"npu\" as well",
      "not flagged: the test is false on the CPU, where the other path is meant to run"}, ""},
    {"device-ids", "distributed", "`device_ids=` / `output_device=` of DistributedDataParallel / DataParallel", W,
     {"{value} if _accel_device.type != \"cpu\" else None", "{value}", "None"},
     "device_ids must be None for CPU modules; accelerators keep their indices"},
    {"int-rank-device", "device-placement", "`.to(i)` / `.cuda(i)` with an integer rank or index", W,
     {"{torch}.device(_accel_device.type, {index})", "{torch}.device(\"npu\", {index})", "\"cpu\""},
     "an int device means a CUDA index; it becomes the index of the target device"},
    {"device-string-format", "device-string", "a string built as 'cuda:{}'.format(i), 'cuda:%d' % i, f\"cuda:{i}\", \"cuda:\" + str(i), \":\".join([\"cuda\", str(i)]), or any string built with a \"cuda\" piece (\"{}:{}\".format(\"cuda\", i)), or a literal \"cuda:N\" (also written \"cuda\" \":N\"), in a device position (`map_location=`, `.to()`, `device=`, `torch.device()`, as for device-string)", W,
     {"({value}.replace(\"cuda\", _accel_device.type, 1) if _accel_device.type != \"cpu\" else \"cpu\")",
      "{value}.replace(\"cuda\", \"npu\", 1)", "\"cpu\""},
     "the device type becomes the target's; on the CPU the index is dropped (torch.load rejects \"cpu:N\")"},
    {"indexed-torch-device", "device-string", "`torch.device(\"cuda\", i)`, `torch.device(type=\"cuda\", index=i)`: a "
     "device type and an index given apart", W,
     {"({torch}.device(_accel_device.type, i) if _accel_device.type != \"cpu\" else {torch}.device(\"cpu\"))",
      "{torch}.device(\"npu\", i)", "{torch}.device(\"cpu\")"},
     "on the CPU the index is dropped, as for \"cuda:N\": torch.load rejects a cpu:N map_location"},
    {"composite-backend", "distributed", "a per-device backend string with a CUDA entry (`\"cuda:nccl,cpu:gloo\"`) in a backend "
     "position (as for nccl-backend)", W,
     {"(f\"{_accel_device.type}:{torch.distributed.get_default_backend_for_device(_accel_device)},cpu:gloo\" if "
      "_accel_device.type != \"cpu\" else \"cpu:gloo\")",
      "\"npu:hccl,cpu:gloo\"", "\"cpu:gloo\""},
     "shown for \"cuda:nccl,cpu:gloo\": the CUDA entry becomes the target's device and backend; on the CPU the other entries remain (cpu:gloo added when "
     "none names the CPU); a CUDA entry with another backend than NCCL is flagged (nccl-string)"},
    {"apex", "apex", "`import apex`, `apex.amp`, `apex.optimizers`, `apex.parallel`", R,
     {"apex is CUDA-only: use torch.amp for mixed precision, torch.optim (fused=/foreach=) for fused optimizers, "
      "DistributedDataParallel for apex.parallel",
      "apex is CUDA-only: use torch.amp, torch.optim or torch_npu's fused optimizers, and DDP",
      "apex is CUDA-only: use torch.amp (bfloat16 on CPU) and torch.optim"}, ""},
    {"cuda-extension", "extension", "`CUDAExtension`, `.cu`/`.cuh` sources, `load_inline(cuda_sources=...)` and "
     "`load`/`load_inline` with `extra_cuda_cflags=` or `with_cuda=True`", R,
     {"custom CUDA kernels need a port per device; keep a PyTorch fallback path",
      "port the kernel to AscendC (or use an existing torch_npu op); keep a PyTorch fallback",
      "build a CppExtension with a CPU implementation instead"}, ""},
    {"triton", "triton", "`import triton`, `@triton.jit` kernels", R,
     {"Triton runs on CUDA, ROCm and XPU; keep a PyTorch fallback for other devices",
      "Ascend needs the triton-ascend backend; check each kernel, keep a PyTorch fallback",
      "Triton kernels do not run on CPU: add a PyTorch implementation"}, ""},
    {"nvidia-kernels", "third-party-cuda", "`import flash_attn`, `transformer_engine`, `xformers`; "
     "`attn_implementation=\"flash_attention_2\"` (or _3)", R,
     {"NVIDIA-only kernels: use torch.nn.functional.scaled_dot_product_attention (attn_implementation=\"sdpa\") and "
      "plain torch modules, which every device runs",
      "no NPU build of these kernels: use torch.nn.functional.scaled_dot_product_attention (attn_implementation=\"sdpa\") "
      "or torch_npu's fused attention (torch_npu.npu_fusion_attention)",
      "NVIDIA-only kernels: use torch.nn.functional.scaled_dot_product_attention (attn_implementation=\"sdpa\") and "
      "plain torch modules on the CPU"}, ""},
    {"cupy", "third-party-cuda", "`import cupy`", R,
     {"CuPy is CUDA/ROCm-only: replace with torch tensor ops", "CuPy does not run on NPU: use torch ops",
      "replace CuPy with NumPy or torch ops"}, ""},
    {"pynvml", "third-party-cuda", "`import pynvml` / `nvidia_smi`", R,
     {"NVML only sees NVIDIA GPUs: use torch.accelerator.memory.* or drop the monitoring",
      "use torch.npu memory APIs or npu-smi", "drop GPU monitoring on CPU"}, ""},
    {"dali", "third-party-cuda", "`import nvidia.dali`", R,
     {"DALI is NVIDIA-only: use torch.utils.data / torchvision transforms",
      "DALI is NVIDIA-only: use torch.utils.data / torchvision transforms (or DVPP on Ascend)",
      "DALI is NVIDIA-only: use torch.utils.data / torchvision transforms"}, ""},
    {"cuda-method-reference", "device-placement", "`.cuda` referenced, not called: `move = model.cuda` with `move()` "
     "called later, `torch.Tensor.cuda` / `nn.Module.cuda` as a value", R,
     {"the call made later moves to CUDA and raises without it: call .to(_accel_device) there, or use "
      "functools.partial(x.to, _accel_device)",
      "the call made later moves to CUDA: use .to(\"npu\") there, or functools.partial(x.to, \"npu\")",
      "the call made later raises without CUDA: use .to(\"cpu\") there, or drop the move"}, ""},
    {"numba-cuda", "third-party-cuda", "`from numba import cuda`, `import numba.cuda`, `numba.cuda.*` (`@cuda.jit` kernels)", R,
     {"numba.cuda runs only on NVIDIA GPUs: write the kernel with torch ops (or @numba.njit on the CPU)",
      "numba.cuda does not run on NPU: write the kernel with torch ops",
      "numba.cuda needs an NVIDIA GPU: use @numba.njit or NumPy/torch ops on the CPU"}, ""},
    {"pycuda", "third-party-cuda", "`import pycuda`, `pycuda.driver`, `pycuda.autoinit`", R,
     {"PyCUDA drives NVIDIA GPUs only: use torch tensors and torch.accelerator instead",
      "PyCUDA does not drive NPUs: use torch tensors and torch.npu", "PyCUDA needs an NVIDIA GPU: use NumPy or torch on the CPU"},
     ""},
    {"cuda-library", "third-party-cuda", "a CUDA runtime library loaded with ctypes: `ctypes.CDLL(\"libcudart.so\")`, "
     "`cdll.LoadLibrary(...)` of libcudart, libcuda, libnvrtc, libcublas, libcudnn, libnccl, libcufft, libcurand, "
     "libcusparse, libcusolver, libnvidia-ml", R,
     {"the library exists only with an NVIDIA driver: call torch's device-generic API instead, or load it only where "
      "torch.cuda.is_available()",
      "no CUDA library on an Ascend machine: use torch_npu's API (or the CANN library) instead",
      "no CUDA library on a CPU machine: drop the call or load it only where torch.cuda.is_available()"}, ""},
};

}  // namespace

std::string_view target_name(Target target) {
  switch (target) {
    case Target::DeviceAgnostic: return "device-agnostic";
    case Target::Npu: return "npu";
    case Target::Cpu: return "cpu";
  }
  return "device-agnostic";
}

Target parse_target(std::string_view name) {
  for (const auto& spec : kTargets)
    if (target_name(spec.target) == name) return spec.target;
  throw std::invalid_argument("unknown target '" + std::string(name) + "' (valid: device-agnostic, npu, cpu)");
}

const TargetSpec& target_spec(Target target) { return kTargets[static_cast<size_t>(target)]; }

const std::vector<Rule>& rule_table() { return kRules; }

bool finding_fails_check(const Rule& rule) {
  return rule.id != "torch.backends.cudnn" && rule.id != "torch.backends.cuda" && rule.id != "cuda-env";
}

const Rule& rule_by_id(std::string_view id) {
  for (const auto& rule : kRules)
    if (rule.id == id) return rule;
  std::string valid;
  for (const auto& rule : kRules) valid += (valid.empty() ? "" : ", ") + std::string(rule.id);
  throw std::invalid_argument("unknown migration rule '" + std::string(id) + "' (valid: " + valid + ")");
}

const Rule* find_torch_api_rule(std::string_view path) {
  const Rule* best = nullptr;
  size_t best_len = 0;
  for (const auto& rule : kRules) {
    if (rule.id.substr(0, 6) != "torch.") continue;
    std::string_view key = rule.id.substr(6);
    bool prefix = path.size() >= key.size() && path.substr(0, key.size()) == key &&
                  (path.size() == key.size() || path[key.size()] == '.');
    if (prefix && key.size() > best_len) {
      best = &rule;
      best_len = key.size();
    }
  }
  return best;
}

std::string expand_template(std::string_view templ, Target target, const TemplateValues& values) {
  const TargetSpec& spec = target_spec(target);
  std::string out;
  out.reserve(templ.size() + 16);
  // Two passes at most: target placeholders may themselves contain {torch} and {index}.
  for (size_t i = 0; i < templ.size();) {
    if (templ[i] == '{') {
      size_t close = templ.find('}', i);
      if (close != std::string_view::npos) {
        std::string_view name = templ.substr(i + 1, close - i - 1);
        std::string_view inner;
        bool known = true;
        if (name == "torch") out += values.torch;
        else if (name == "index") out += values.index;
        else if (name == "prefix") out += values.prefix;
        else if (name == "value") out += values.value;
        else if (name == "device") inner = spec.device;
        else if (name == "device_type") inner = spec.device_type;
        else if (name == "device_at_index") inner = spec.device_at_index;
        else if (name == "backend") inner = spec.backend;
        else known = false;
        if (!inner.empty()) out += expand_template(inner, target, values);
        if (known) {
          i = close + 1;
          continue;
        }
      }
    }
    out += templ[i++];
  }
  return out;
}

}  // namespace crosstrain::migrate
