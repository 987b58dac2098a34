// TFRecord framing for writing (record_reader.h describes the format).
#pragma once

#include <string>
#include <string_view>

namespace trainwatch::tfevents {

// Appends one framed record holding `data` to *out.
void AppendRecord(std::string_view data, std::string* out);

}  // namespace trainwatch::tfevents
