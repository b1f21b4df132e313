#pragma once
// Code that already chooses its device: a test for CUDA (`device.type == "cuda"`, `"cuda" in dev`,
// `x.is_cuda`, `dev.startswith("cuda")`) and the code that runs only when such a test passed. The
// rewriter leaves guarded code alone: it runs only on CUDA, where it is correct as written, and a
// migrated device makes the test false, so it is skipped there. Internal to tools/migrate.
#include "tools/migrate/python_syntax.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace crosstrain::migrate {

class CudaGuards {
 public:
  // With `availability` (the cpu target, which keeps torch.cuda.is_available() as written), a
  // call of torch.cuda.is_available() is a CUDA test too: what it guards never runs on the CPU.
  CudaGuards(const PythonSyntax& syntax, bool availability) : syntax_(syntax), availability_(availability) {}

  // True when `condition` passes only for CUDA (a positive test, possibly under `and` / parentheses).
  bool is_cuda_test(TSNode condition) const;
  // The same, counting only tests of a device (`x.is_cuda`, `d.type == "cuda"`), not availability.
  bool is_device_cuda_test(TSNode condition) const { return test_uncached(condition, 0, false); }
  // A name (`cuda`, `args.cuda`) that holds a value implying torch.cuda.is_available(): with
  // `availability`, testing it is a CUDA test too.
  void add_availability_name(std::string_view spelling) { availability_names_.emplace(spelling); }
  // True when `ancestors` (innermost last) put their last child in the body of `if <cuda test>:` /
  // `elif <cuda test>:`, the first branch of `a if <cuda test> else b`, or the right operand of
  // `<cuda test> and b`.
  bool guarded(TSNode node, const std::vector<TSNode>& ancestors) const;
  // `"cuda" if <cuda test> else b`: a device type derived from a test. Its test and its "cuda"
  // are rewritten together (so the result stays consistent on the target) instead of guarding.
  bool is_type_derivation(TSNode conditional) const;

 private:
  bool test_uncached(TSNode condition, int depth, bool availability) const;

  const PythonSyntax& syntax_;
  bool availability_;
  mutable std::map<uint32_t, bool> tests_;  // condition start byte -> is_cuda_test
  std::set<std::string, std::less<>> availability_names_;
};

// A string literal whose value is exactly "cuda" or "cuda:N".
bool is_cuda_literal(const PythonSyntax& syntax, TSNode node);

}  // namespace crosstrain::migrate
