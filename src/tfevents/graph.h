// TensorFlow GraphDefs and trainwatch's graph JSON (the tree GET /api/v1/graph returns and the
// dashboard draws: {"name", "type", "params", "children"}; docs/tensorboard.md#graphs).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trainwatch::tfevents {

struct GraphNode {
  std::string name;  // unique within the graph; '/' separates name scopes
  std::string op;
  std::vector<std::string> inputs;  // "node", "node:1", "^control_dep"
  std::string device;

  bool operator==(const GraphNode&) const = default;
};

// The most name scopes a node name may nest ("a/b/c" is 3): the graph JSON of deeper names would
// nest beyond what the server accepts (kMaxGraphJsonDepth), and the tree of scopes, each holding
// its whole path, would take memory quadratic in the name's length.
constexpr size_t kMaxGraphScopeDepth = 100;

// Decodes a serialized GraphDef's nodes (name, op, input, device; attrs and the function
// library are not kept). InvalidArgument for malformed bytes and for a node name of more than
// kMaxGraphScopeDepth scopes.
Result<std::vector<GraphNode>> DecodeGraphDef(std::string_view graph_def);
std::string EncodeGraphDef(const std::vector<GraphNode>& nodes);

// The nodes as a tree of name scopes: the root {"name": "", "type": "GraphDef", ...}; a scope
// {"name": "dense", "path": "dense", "type": "NameScope", ...}; an op {"name": "MatMul", "path":
// "dense/MatMul", "type": "MatMul", "op": "MatMul", "inputs": [...], "device": ...}. A node whose
// name is also a scope ("a" beside "a/b") is that scope's entry, with its op.
std::string GraphToJson(const std::vector<GraphNode>& nodes);

// The reverse, for export: a tree made by GraphToJson gives back its nodes (every entry with an
// "op"); any other tree (the SDK's module tree) becomes one node per module, named by its path
// with '/' between levels and with the module's type as op. InvalidArgument if `json` is not a
// JSON object.
Result<std::vector<GraphNode>> GraphFromJson(std::string_view json);

}  // namespace trainwatch::tfevents
