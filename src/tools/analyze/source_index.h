#pragma once
// Which line of the script made each span of a trace (internal to the analysis). Needs the
// trace's Python stack (python_function events, torch.profiler's with_stack) and the call sites
// `crosstrain run --profile` writes beside it (call_sites.h); without them nothing is known.
//
// A host span (operator, annotation, runtime call) runs inside the innermost Python call open on
// its thread at its start. That call was made from a line of its caller: when the caller is one of
// the user's files, that line is the span's *user line*; otherwise the call above it is asked, and
// so on out to the script. The first caller line outside torch and the standard library (often a
// model library's, such as timm's mlp.py) is the span's *source line*. A backward operator on a
// thread without Python (the autograd engine's device threads) takes the lines of the forward
// operator it differentiates (Kineto's fwdbwd flows). Device work takes its operator's lines.
//
// Cost: O(n log n) in spans; no walk up a call stack per span.
#include <cstdint>
#include <string>
#include <vector>

#include "tools/analyze/span_links.h"
#include "tools/analyze/trace.h"

namespace crosstrain::analyze {

constexpr int32_t kNoSite = -1;

class SourceIndex {
 public:
  SourceIndex(const Trace& trace, const SpanLinks& links);

  bool available() const { return available_; }
  // Indices into trace.call_sites.calls, or kNoSite.
  int32_t user_site(size_t span) const { return available_ ? user_[span] : kNoSite; }
  int32_t source_site(size_t span) const { return available_ ? source_[span] : kNoSite; }
  // The user line when there is one, else the source line.
  int32_t site(size_t span) const {
    const int32_t u = user_site(span);
    return u != kNoSite ? u : source_site(span);
  }
  // For a python_function span: the call site of that very call (its caller's line), or kNoSite.
  int32_t own_site(size_t span) const { return available_ ? own_[span] : kNoSite; }
  // For a host span: the call site of the innermost Python call around it, when that call was
  // made from a user's or a library's line (the span was issued by that line itself, not from
  // inside torch); else kNoSite.
  int32_t direct_site(size_t span) const { return available_ ? direct_[span] : kNoSite; }
  // A (file, line) key that is equal for every call made from the same line.
  int64_t line_key(int32_t site) const;
  std::string label(int32_t site) const;   // "train.py:84"
  std::string code(int32_t site) const;    // the line's text
  bool user_file(int32_t site) const;

 private:
  void link_python(const Trace& t);
  void attribute_host(const Trace& t, const SpanLinks& links);
  void follow_backward_flows(const Trace& t);

  const Trace& trace_;
  bool available_ = false;
  std::vector<int32_t> own_, user_, source_, direct_;
};

}  // namespace crosstrain::analyze
