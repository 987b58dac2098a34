// Model graph JSON read back (tfevents::GraphFromJson, src/tfevents/graph.h): `trainwatch export`
// turns the graph a run stored (RunMetadata.graph_json, sent by any client: the SDK's module tree
// or an imported GraphDef's tree) into a GraphDef.
//
// Checks, besides memory safety and no exception escaping: the nodes it returns encode as a
// GraphDef that decodes to the same nodes, and make graph JSON that is valid JSON.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "tfevents/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainwatch::tfevents;
  auto nodes = GraphFromJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!nodes.ok()) return 0;
  auto decoded = DecodeGraphDef(EncodeGraphDef(*nodes));
  FUZZ_CHECK(decoded.ok() && *decoded == *nodes, "GraphDef round trip changed the nodes");
  FUZZ_CHECK(nlohmann::json::accept(GraphToJson(*nodes)), "GraphToJson wrote invalid JSON");
  return 0;
}
