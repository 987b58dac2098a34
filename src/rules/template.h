// Template: an annotation such as "loss is {{ $value }} at step {{ $step }} in {{ $run }}",
// compiled once when the rule file is parsed and expanded for every event.
//
// Placeholders: {{ $value }}, {{ $step }}, {{ $run }}, {{ $project }}, {{ $alert }},
// {{ $metric }} and {{ $labels.<name> }}; spaces inside the braces are optional. Everything else is
// literal text. Immutable after parsing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trainwatch::rules {

// What an expansion fills in. Borrowed for the call only.
struct TemplateVars {
  double value = 0;
  int64_t step = 0;
  std::string_view run;
  std::string_view project;
  std::string_view alert;
  std::string_view metric;
  const std::map<std::string, std::string>* labels = nullptr;  // may be null (no labels)
};

// A value as templates and default messages print it: 6 significant digits ("0.512346", "1e-05"),
// "NaN", "+Inf", "-Inf".
std::string FormatValue(double v);

class Template {
 public:
  Template() = default;

  // InvalidArgument "unknown template variable '{{ $x }}'" or "unclosed '{{'" on bad input.
  static Result<Template> Parse(std::string_view text);

  std::string Expand(const TemplateVars& vars) const;

  const std::string& text() const { return text_; }
  // The label names referenced through {{ $labels.<name> }}, in order of appearance.
  std::vector<std::string> label_refs() const;

 private:
  enum class Var { kLiteral, kValue, kStep, kRun, kProject, kAlert, kMetric, kLabel };
  struct Piece {
    Var var;
    std::string text;  // kLiteral: the text; kLabel: the label name
  };

  std::string text_;
  std::vector<Piece> pieces_;
};

}  // namespace trainwatch::rules
