#include "rules/template.h"

#include <cmath>
#include <cstdio>

namespace trainwatch::rules {

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

Result<Template> Template::Parse(std::string_view text) {
  Template t;
  t.text_ = std::string(text);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) open = text.size();
    if (open > pos)
      t.pieces_.push_back(Piece{Var::kLiteral, std::string(text.substr(pos, open - pos))});
    if (open == text.size()) break;
    size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos) {
      return Status::InvalidArgument("unclosed '{{' at offset " + std::to_string(open + 1));
    }
    std::string_view inner = text.substr(open + 2, close - open - 2);
    while (!inner.empty() && inner.front() == ' ') inner.remove_prefix(1);
    while (!inner.empty() && inner.back() == ' ') inner.remove_suffix(1);
    Piece piece{Var::kLiteral, ""};
    if (inner == "$value")
      piece.var = Var::kValue;
    else if (inner == "$step")
      piece.var = Var::kStep;
    else if (inner == "$run")
      piece.var = Var::kRun;
    else if (inner == "$project")
      piece.var = Var::kProject;
    else if (inner == "$alert")
      piece.var = Var::kAlert;
    else if (inner == "$metric")
      piece.var = Var::kMetric;
    else if (inner.starts_with("$labels.") && inner.size() > 8)
      piece = Piece{Var::kLabel, std::string(inner.substr(8))};
    else {
      return Status::InvalidArgument("unknown template variable '{{ " + std::string(inner) +
                                     " }}' (known: $value, $step, $run, $project, $alert, $metric, "
                                     "$labels.<name>)");
    }
    t.pieces_.push_back(std::move(piece));
    pos = close + 2;
  }
  return t;
}

std::string Template::Expand(const TemplateVars& vars) const {
  std::string out;
  for (const Piece& p : pieces_) {
    switch (p.var) {
      case Var::kLiteral:
        out += p.text;
        break;
      case Var::kValue:
        out += FormatValue(vars.value);
        break;
      case Var::kStep:
        out += std::to_string(vars.step);
        break;
      case Var::kRun:
        out += vars.run;
        break;
      case Var::kProject:
        out += vars.project;
        break;
      case Var::kAlert:
        out += vars.alert;
        break;
      case Var::kMetric:
        out += vars.metric;
        break;
      case Var::kLabel:
        if (vars.labels != nullptr) {
          auto it = vars.labels->find(p.text);
          if (it != vars.labels->end()) out += it->second;
        }
        break;
    }
  }
  return out;
}

std::vector<std::string> Template::label_refs() const {
  std::vector<std::string> out;
  for (const Piece& p : pieces_) {
    if (p.var == Var::kLabel) out.push_back(p.text);
  }
  return out;
}

}  // namespace trainwatch::rules
