#pragma once
// The advisor: one table of rules, each with a threshold, that read a TraceAnalysis and report a
// Finding (the measured value, the evidence, the threshold, a concrete suggestion) when the
// threshold is crossed. Rules about device behaviour stay silent on traces without device activity.
// The table is the single place thresholds live; docs/ANALYZE.md lists it.
#include <string>
#include <vector>

#include "tools/analyze/analysis.h"

namespace crosstrain::analyze {

struct AdvisorRule {
  const char* id;
  const char* title;
  double threshold;
  const char* threshold_text;   // how the threshold reads in reports
  const char* suggestion;
  // The measured value, or a negative number when the rule does not apply to this trace.
  double (*measure)(const TraceAnalysis& a);
  // How the measured value reads in reports.
  std::string (*describe)(const TraceAnalysis& a, double value);
  // The events behind the value and their share of step time, so a reader can check the finding.
  std::string (*evidence)(const TraceAnalysis& a);
};

// Every rule: the trace rules of advisor.cpp, then the rules about the script's code and
// DataLoaders (advisor_script_rules.cpp).
const std::vector<AdvisorRule>& advisor_rules();
const std::vector<AdvisorRule>& script_rules();

// The lines of the script behind a rule's evidence (empty without source lines).
std::vector<SourceLine> rule_sources(const TraceAnalysis& a, const std::string& rule_id);

// Evaluates every rule; findings in table order.
std::vector<Finding> run_advisor(const TraceAnalysis& a);

}  // namespace crosstrain::analyze
