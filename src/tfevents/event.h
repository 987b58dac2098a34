// One decoded `Event` record (tensorflow/core/util/event.proto) at its top level: the union member
// it carries is left as a view for the decoder of that member.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace trainwatch::tfevents {

// Event field numbers (event.proto). The `what` oneof holds at most one of 3-9.
namespace event_field {
constexpr uint32_t kWallTime = 1;
constexpr uint32_t kStep = 2;
constexpr uint32_t kFileVersion = 3;
constexpr uint32_t kGraphDef = 4;
constexpr uint32_t kSummary = 5;
constexpr uint32_t kLogMessage = 6;
constexpr uint32_t kSessionLog = 7;
constexpr uint32_t kTaggedRunMetadata = 8;
constexpr uint32_t kMetaGraphDef = 9;
}  // namespace event_field

enum class EventKind {
  kEmpty,         // only wall time / step
  kFileVersion,   // payload: "brain.Event:2"
  kGraphDef,      // payload: a serialized GraphDef
  kSummary,       // payload: a serialized Summary
  kSessionLog,    // session_status set
  kMetaGraphDef,  // payload: a serialized MetaGraphDef (its field 2 is a GraphDef)
  kOther,         // log_message, tagged_run_metadata: not imported
};

enum class SessionStatus { kUnspecified = 0, kStart = 1, kStop = 2, kCheckpoint = 3 };

struct EventView {
  double wall_time = 0;
  int64_t step = 0;
  EventKind kind = EventKind::kEmpty;
  std::string_view payload;  // a view into the record
  SessionStatus session_status = SessionStatus::kUnspecified;
};

// Decodes the top level of an Event. InvalidArgument (naming the problem) on malformed bytes.
Status DecodeEvent(std::string_view record, EventView* out);

// The GraphDef inside a MetaGraphDef (field 2); empty when it has none.
Result<std::string_view> GraphDefOfMetaGraph(std::string_view meta_graph_def);

}  // namespace trainwatch::tfevents
