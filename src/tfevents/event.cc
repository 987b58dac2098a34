#include "tfevents/event.h"

#include "tfevents/wire_reader.h"

namespace trainwatch::tfevents {
namespace {

Status DecodeSessionLog(std::string_view bytes, SessionStatus* status) {
  WireReader r(bytes);
  while (r.Next()) {
    uint64_t v;
    if (r.field() == 1) {  // SessionLog.status
      if (r.ReadVarint(&v))
        *status = v <= 3 ? static_cast<SessionStatus>(v) : SessionStatus::kUnspecified;
    } else {
      r.Skip();
    }
  }
  if (!r.ok()) return Status::InvalidArgument(std::string("session_log: ") + r.error());
  return Status::Ok();
}

}  // namespace

Status DecodeEvent(std::string_view record, EventView* out) {
  *out = EventView{};
  WireReader r(record);
  while (r.Next()) {
    switch (r.field()) {
      case event_field::kWallTime:
        r.ReadDouble(&out->wall_time);
        break;
      case event_field::kStep:
        r.ReadInt64(&out->step);
        break;
      case event_field::kFileVersion:
        if (r.ReadBytes(&out->payload)) out->kind = EventKind::kFileVersion;
        break;
      case event_field::kGraphDef:
        if (r.ReadBytes(&out->payload)) out->kind = EventKind::kGraphDef;
        break;
      case event_field::kSummary:
        if (r.ReadBytes(&out->payload)) out->kind = EventKind::kSummary;
        break;
      case event_field::kSessionLog:
        if (r.ReadBytes(&out->payload)) {
          out->kind = EventKind::kSessionLog;
          TW_RETURN_IF_ERROR(DecodeSessionLog(out->payload, &out->session_status));
        }
        break;
      case event_field::kMetaGraphDef:
        if (r.ReadBytes(&out->payload)) out->kind = EventKind::kMetaGraphDef;
        break;
      case event_field::kLogMessage:
      case event_field::kTaggedRunMetadata:
        if (r.ReadBytes(&out->payload)) out->kind = EventKind::kOther;
        break;
      default:
        r.Skip();
    }
  }
  if (!r.ok()) return Status::InvalidArgument(std::string("event: ") + r.error());
  return Status::Ok();
}

Result<std::string_view> GraphDefOfMetaGraph(std::string_view meta_graph_def) {
  WireReader r(meta_graph_def);
  std::string_view graph;
  while (r.Next()) {
    if (r.field() == 2) {
      r.ReadBytes(&graph);
    } else {
      r.Skip();
    }
  }
  if (!r.ok()) return Status::InvalidArgument(std::string("meta_graph_def: ") + r.error());
  return graph;
}

}  // namespace trainwatch::tfevents
