// FlagSet: the flags and positional arguments of one `trainwatch` command, declared as a table.
// One parser reads argv for every command but `serve` (whose settings also come from a YAML file:
// server/config.cc), and the usage text is generated from the same table, so help and parser
// cannot drift apart. docs/cli.md describes the conventions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trainwatch::tools {

// One flag. `set` gets the value ("" for a switch); an error it returns is reported as
// "<name>: <message>" and makes the command exit 2.
struct Flag {
  std::string name;        // "--project"
  std::string value_name;  // "P" in "--project P"; empty: a switch, which takes no value
  std::string help;        // for the usage; '\n' starts an indented continuation line
  std::function<Status(const std::string& value)> set;
  // When set and non-empty, this environment variable is the flag's default (applied through
  // `set` before the command line; the usage names it).
  std::string env = {};
  // A flag the command cannot run without: Parse fails with "missing <name> <value_name>".
  bool required = false;
};

// The usual kinds of flag.
Flag StringFlag(std::string name, std::string value_name, std::string help, std::string* target);
// Repeatable: every occurrence appends its value.
Flag ListFlag(std::string name, std::string value_name, std::string help,
              std::vector<std::string>* target);
Flag SwitchFlag(std::string name, std::string help, bool* target);
// A duration in seconds (common/duration.h: "500ms", "10m", "1h30m", or bare seconds "300").
// `positive`: zero is refused too.
Flag DurationFlag(std::string name, std::string value_name, std::string help, double* seconds,
                  bool positive = false);
// A whole decimal number, at least `min`.
Flag IntegerFlag(std::string name, std::string value_name, std::string help, int64_t* target,
                 int64_t min);

// "123" -> 123; InvalidArgument "bad number 'x'" for anything but a whole decimal number.
Result<int64_t> ParseInteger(std::string_view text);

// Not thread-safe; a command builds one, parses once and drops it. The targets the flags write to
// must outlive Parse().
class FlagSet {
 public:
  // `command` is the word after `trainwatch` ("import"); `description` follows the synopsis in
  // the usage text.
  FlagSet(std::string command, std::string description);

  void Add(Flag flag);
  // Positional arguments are taken in the order they are added: a required one, an optional one
  // (only after the required ones), or a last one that takes every remaining argument (at least
  // one when `required`).
  void AddPositional(std::string name, std::string* target, bool required = true);
  void AddPositionalList(std::string name, std::vector<std::string>* target, bool required = true);
  // Replaces the generated "usage:" line(s) (for a command with several forms, like `keys`).
  void SetSynopsis(std::string synopsis) { synopsis_ = std::move(synopsis); }

  // Reads `args` (argv after the command): the environment defaults first, then "--flag value",
  // "--flag=value", switches and positional arguments in any order; "--" makes the rest
  // positional. InvalidArgument naming the flag or argument: unknown flag, missing value, a value
  // given to a switch, a value the flag refuses, a required flag absent, a missing or unexpected
  // positional argument.
  // `--help`/`-h` are not flags here: see HelpRequested.
  Status Parse(const std::vector<std::string>& args) const;
  // True if `args` asks for help (--help or -h where a flag may stand); it wins over any error.
  bool HelpRequested(const std::vector<std::string>& args) const;
  std::string Usage() const;
  const std::string& command() const { return command_; }

 private:
  struct Positional {
    std::string name;
    std::function<void(const std::string&)> set;
    bool required;
    bool list;
  };
  struct Token {
    const Flag* flag;  // null: a positional argument
    std::string value;
  };

  const Flag* Find(std::string_view name) const;
  // Splits `args` into flags with their values and positional arguments; *help if asked for.
  Status Tokenize(const std::vector<std::string>& args, std::vector<Token>* tokens,
                  bool* help) const;
  Status ApplyEnvironment() const;
  Status ApplyPositionals(const std::vector<std::string>& values) const;
  std::string GeneratedSynopsis() const;

  std::string command_;
  std::string description_;
  std::string synopsis_;
  std::vector<Flag> flags_;
  std::vector<Positional> positionals_;
};

// The common entry of every command: --help prints the usage on stdout (returns 0); a usage error
// prints "trainwatch <command>: <error>" and the usage on stderr (returns 2); std::nullopt when the
// command should run.
std::optional<int> ParseCommandLine(const FlagSet& flags, const std::vector<std::string>& args);

}  // namespace trainwatch::tools
