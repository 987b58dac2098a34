#include "ingest/limits.h"

#include "ingest/json_scanner.h"

namespace trainwatch::ingest {

Status ValidateName(std::string_view what, std::string_view name, const IngestLimits& limits) {
  if (name.empty()) return Status::InvalidArgument(std::string(what) + " name is empty");
  if (name.size() > limits.max_name_bytes) {
    return Status::InvalidArgument(std::string(what) + " name is " + std::to_string(name.size()) +
                                   " bytes; the limit is " + std::to_string(limits.max_name_bytes));
  }
  if (!IsValidUtf8(name)) return Status::InvalidArgument(std::string(what) + " name is not valid UTF-8");
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      return Status::InvalidArgument(std::string(what) + " name contains a control character");
    }
  }
  return Status::Ok();
}

}  // namespace trainwatch::ingest
