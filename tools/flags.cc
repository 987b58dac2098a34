#include "flags.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "common/duration.h"

namespace trainwatch::tools {
namespace {

constexpr std::string_view kHelpName = "-h, --help";
constexpr size_t kSynopsisWidth = 100;

// "--name VALUE" as the usage shows it.
std::string Spelled(const Flag& f) {
  return f.value_name.empty() ? f.name : f.name + " " + f.value_name;
}

// `text` with every line after the first indented by `indent` spaces.
std::string IndentContinuations(const std::string& text, size_t indent) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out.append(indent, ' ');
  }
  return out;
}

}  // namespace

Flag StringFlag(std::string name, std::string value_name, std::string help, std::string* target) {
  return {std::move(name), std::move(value_name), std::move(help), [target](const std::string& v) {
            *target = v;
            return Status::Ok();
          }};
}

Flag ListFlag(std::string name, std::string value_name, std::string help,
              std::vector<std::string>* target) {
  return {std::move(name), std::move(value_name), std::move(help), [target](const std::string& v) {
            target->push_back(v);
            return Status::Ok();
          }};
}

Flag SwitchFlag(std::string name, std::string help, bool* target) {
  return {std::move(name), "", std::move(help), [target](const std::string&) {
            *target = true;
            return Status::Ok();
          }};
}

Flag DurationFlag(std::string name, std::string value_name, std::string help, double* seconds,
                  bool positive) {
  return {std::move(name), std::move(value_name), std::move(help),
          [seconds, positive](const std::string& v) {
            TW_ASSIGN_OR_RETURN(double d, ParseDuration(v));
            if (positive && d <= 0) return Status::InvalidArgument("must be positive");
            *seconds = d;
            return Status::Ok();
          }};
}

Flag IntegerFlag(std::string name, std::string value_name, std::string help, int64_t* target,
                 int64_t min) {
  return {std::move(name), std::move(value_name), std::move(help),
          [target, min](const std::string& v) {
            TW_ASSIGN_OR_RETURN(int64_t n, ParseInteger(v));
            if (n < min) return Status::InvalidArgument("must be at least " + std::to_string(min));
            *target = n;
            return Status::Ok();
          }};
}

Result<int64_t> ParseInteger(std::string_view text) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Status::InvalidArgument("bad number '" + std::string(text) + "'");
  }
  return n;
}

FlagSet::FlagSet(std::string command, std::string description)
    : command_(std::move(command)), description_(std::move(description)) {}

void FlagSet::Add(Flag flag) { flags_.push_back(std::move(flag)); }

void FlagSet::AddPositional(std::string name, std::string* target, bool required) {
  positionals_.push_back(
      {std::move(name), [target](const std::string& v) { *target = v; }, required, false});
}

void FlagSet::AddPositionalList(std::string name, std::vector<std::string>* target, bool required) {
  positionals_.push_back(
      {std::move(name), [target](const std::string& v) { target->push_back(v); }, required, true});
}

const Flag* FlagSet::Find(std::string_view name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Status FlagSet::Tokenize(const std::vector<std::string>& args, std::vector<Token>* tokens,
                         bool* help) const {
  Status first_error;
  auto error = [&](std::string message) {
    if (first_error.ok()) first_error = Status::InvalidArgument(std::move(message));
  };
  bool only_positionals = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positionals || a == "-" || !a.starts_with("-")) {
      tokens->push_back({nullptr, a});
    } else if (a == "--") {
      only_positionals = true;
    } else if (a == "--help" || a == "-h") {
      *help = true;
    } else {
      // Scanning goes on after an error, so that a later --help is still seen.
      const size_t eq = a.find('=');
      const std::string name = a.substr(0, eq);
      const Flag* flag = Find(name);
      if (!flag) {
        error("unknown flag '" + name + "'");
      } else if (flag->value_name.empty()) {
        if (eq != std::string::npos) error(name + " takes no value");
        tokens->push_back({flag, ""});
      } else if (eq != std::string::npos) {
        tokens->push_back({flag, a.substr(eq + 1)});
      } else if (i + 1 < args.size()) {
        tokens->push_back({flag, args[++i]});
      } else {
        error(name + " needs a value (" + Spelled(*flag) + ")");
      }
    }
  }
  return first_error;
}

bool FlagSet::HelpRequested(const std::vector<std::string>& args) const {
  std::vector<Token> tokens;
  bool help = false;
  (void)Tokenize(args, &tokens, &help);
  return help;
}

Status FlagSet::ApplyEnvironment() const {
  for (const Flag& f : flags_) {
    if (f.env.empty()) continue;
    const char* value = std::getenv(f.env.c_str());
    if (value == nullptr || *value == '\0') continue;
    TW_RETURN_IF_ERROR(f.set(value).WithContext("environment " + f.env + " (" + f.name + ")"));
  }
  return Status::Ok();
}

Status FlagSet::ApplyPositionals(const std::vector<std::string>& values) const {
  size_t next = 0;
  for (const Positional& p : positionals_) {
    if (next >= values.size()) {
      if (p.required) return Status::InvalidArgument("missing " + p.name);
      continue;
    }
    do {
      p.set(values[next++]);
    } while (p.list && next < values.size());
  }
  if (next < values.size())
    return Status::InvalidArgument("unexpected argument '" + values[next] + "'");
  return Status::Ok();
}

Status FlagSet::Parse(const std::vector<std::string>& args) const {
  std::vector<Token> tokens;
  bool help = false;
  TW_RETURN_IF_ERROR(Tokenize(args, &tokens, &help));
  TW_RETURN_IF_ERROR(ApplyEnvironment());
  std::vector<std::string> positional;
  for (const Token& t : tokens) {
    if (t.flag == nullptr) {
      positional.push_back(t.value);
    } else {
      TW_RETURN_IF_ERROR(t.flag->set(t.value).WithContext(t.flag->name));
    }
  }
  TW_RETURN_IF_ERROR(ApplyPositionals(positional));
  for (const Flag& f : flags_) {
    const bool given =
        std::any_of(tokens.begin(), tokens.end(), [&](const Token& t) { return t.flag == &f; });
    if (f.required && !given) return Status::InvalidArgument("missing " + Spelled(f));
  }
  return Status::Ok();
}

std::string FlagSet::GeneratedSynopsis() const {
  std::vector<std::string> words;
  for (const Positional& p : positionals_) {
    const std::string word = p.name + (p.list ? "..." : "");
    words.push_back(p.required ? word : "[" + word + "]");
  }
  for (const Flag& f : flags_) words.push_back(f.required ? Spelled(f) : "[" + Spelled(f) + "]");
  std::string line = "usage: trainwatch " + command_;
  const std::string indent(line.size(), ' ');
  std::string out;
  for (const std::string& w : words) {
    if (line.size() + 1 + w.size() > kSynopsisWidth && line.size() > indent.size()) {
      out += line + "\n";
      line = indent;
    }
    line += " " + w;
  }
  return out + line + "\n";
}

std::string FlagSet::Usage() const {
  std::string out = synopsis_.empty() ? GeneratedSynopsis() : synopsis_;
  if (!out.ends_with('\n')) out += '\n';
  out += description_;
  if (!out.ends_with('\n')) out += '\n';
  size_t width = kHelpName.size();
  for (const Flag& f : flags_) width = std::max(width, Spelled(f).size());
  width += 2;
  auto line = [&](const std::string& spelled, std::string help) {
    std::string padded = "  " + spelled;
    padded.append(width - spelled.size(), ' ');
    out += padded + IndentContinuations(help, width + 2) + "\n";
  };
  for (const Flag& f : flags_)
    line(Spelled(f), f.env.empty() ? f.help : f.help + " (env " + f.env + ")");
  line(std::string(kHelpName), "print this help");
  return out;
}

std::optional<int> ParseCommandLine(const FlagSet& flags, const std::vector<std::string>& args) {
  if (flags.HelpRequested(args)) {
    std::fputs(flags.Usage().c_str(), stdout);
    return 0;
  }
  if (Status s = flags.Parse(args); !s.ok()) {
    std::fprintf(stderr, "trainwatch %s: %s\n%s", flags.command().c_str(), s.message().c_str(),
                 flags.Usage().c_str());
    return 2;
  }
  return std::nullopt;
}

}  // namespace trainwatch::tools
