#include "tfevents/graph.h"

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "tfevents/wire_reader.h"
#include "tfevents/wire_writer.h"
#include "common/json.h"

namespace trainwatch::tfevents {
namespace {

using nlohmann::json;

Result<GraphNode> DecodeNodeDef(std::string_view bytes) {
  GraphNode node;
  WireReader r(bytes);
  std::string_view s;
  while (r.Next()) {
    switch (r.field()) {
      case 1:
        if (r.ReadBytes(&s)) node.name = s;
        break;
      case 2:
        if (r.ReadBytes(&s)) node.op = s;
        break;
      case 3:
        if (r.ReadBytes(&s)) node.inputs.emplace_back(s);
        break;
      case 4:
        if (r.ReadBytes(&s)) node.device = s;
        break;
      default:
        r.Skip();
    }
  }
  if (!r.ok()) return Status::InvalidArgument(std::string("node: ") + r.error());
  return node;
}

// One level of the scope tree.
struct ScopeNode {
  std::string name;
  std::string path;
  const GraphNode* op = nullptr;
  std::vector<std::unique_ptr<ScopeNode>> children;  // in first-seen order
  std::map<std::string, ScopeNode*, std::less<>> by_name;

  ScopeNode* Child(std::string_view child_name) {
    auto it = by_name.find(child_name);
    if (it != by_name.end()) return it->second;
    auto node = std::make_unique<ScopeNode>();
    node->name = child_name;
    node->path = path.empty() ? std::string(child_name) : path + "/" + std::string(child_name);
    ScopeNode* raw = node.get();
    children.push_back(std::move(node));
    by_name.emplace(raw->name, raw);
    return raw;
  }
};

json ToJson(const ScopeNode& node, bool root) {
  json out = json::object();
  out["name"] = node.name;
  if (!root) out["path"] = node.path;
  out["type"] = root ? "GraphDef" : (node.op ? node.op->op : "NameScope");
  if (node.op) {
    out["op"] = node.op->op;
    out["inputs"] = node.op->inputs;
    if (!node.op->device.empty()) out["device"] = node.op->device;
  }
  out["params"] = json::array();
  json children = json::array();
  for (const auto& c : node.children) children.push_back(ToJson(*c, false));
  out["children"] = std::move(children);
  return out;
}

std::string StringField(const json& node, const char* key) {
  auto it = node.find(key);
  return it != node.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool HasOps(const json& node) {
  if (node.contains("op")) return true;
  auto it = node.find("children");
  if (it == node.end() || !it->is_array()) return false;
  for (const json& c : *it) {
    if (c.is_object() && HasOps(c)) return true;
  }
  return false;
}

void CollectNodes(const json& node, const std::string& parent_path, bool tf_graph, bool root,
                  std::vector<GraphNode>* out) {
  std::string path = StringField(node, "path");
  const std::string name = StringField(node, "name");
  if (path.empty() && !root) path = parent_path.empty() ? name : parent_path + "/" + name;
  if (!tf_graph) {
    for (char& c : path) c = c == '.' ? '/' : c;  // the SDK's qualified names use dots
  }
  if (tf_graph && node.contains("op")) {
    GraphNode g{path, StringField(node, "op"), {}, StringField(node, "device")};
    if (auto it = node.find("inputs"); it != node.end() && it->is_array()) {
      for (const json& in : *it) {
        if (in.is_string()) g.inputs.push_back(in.get<std::string>());
      }
    }
    out->push_back(std::move(g));
  } else if (!tf_graph && !root) {
    out->push_back(GraphNode{path, StringField(node, "type"), {}, {}});
  }
  if (auto it = node.find("children"); it != node.end() && it->is_array()) {
    for (const json& c : *it) {
      if (c.is_object()) CollectNodes(c, path, tf_graph, false, out);
    }
  }
}

}  // namespace

Result<std::vector<GraphNode>> DecodeGraphDef(std::string_view graph_def) {
  std::vector<GraphNode> nodes;
  WireReader r(graph_def);
  while (r.Next()) {
    std::string_view node;
    if (r.field() == 1) {
      if (!r.ReadBytes(&node)) continue;
      TW_ASSIGN_OR_RETURN(GraphNode n, DecodeNodeDef(node));
      if (std::count(n.name.begin(), n.name.end(), '/') >= static_cast<ptrdiff_t>(kMaxGraphScopeDepth)) {
        return Status::InvalidArgument("graph_def: node '" + n.name.substr(0, 64) +
                                       (n.name.size() > 64 ? "...'" : "'") + " nests more than " +
                                       std::to_string(kMaxGraphScopeDepth) + " name scopes");
      }
      nodes.push_back(std::move(n));
    } else {
      r.Skip();
    }
  }
  if (!r.ok()) return Status::InvalidArgument(std::string("graph_def: ") + r.error());
  return nodes;
}

std::string EncodeGraphDef(const std::vector<GraphNode>& nodes) {
  std::string out;
  WireWriter w(&out);
  std::string node;
  for (const GraphNode& n : nodes) {
    node.clear();
    WireWriter nw(&node);
    nw.Bytes(1, n.name);
    nw.Bytes(2, n.op);
    for (const std::string& in : n.inputs) nw.Bytes(3, in);
    if (!n.device.empty()) nw.Bytes(4, n.device);
    w.Bytes(1, node);
  }
  return out;
}

std::string GraphToJson(const std::vector<GraphNode>& nodes) {
  ScopeNode root;
  for (const GraphNode& n : nodes) {
    ScopeNode* at = &root;
    std::string_view rest = n.name;
    while (!rest.empty()) {
      const size_t slash = rest.find('/');
      at = at->Child(rest.substr(0, slash));
      rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    }
    if (at != &root) at->op = &n;
  }
  // Names are bytes: invalid UTF-8 becomes U+FFFD rather than an exception.
  return ToJson(root, true).dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::vector<GraphNode>> GraphFromJson(std::string_view text) {
  TW_ASSIGN_OR_RETURN(json doc, ParseJson(text, kMaxGraphJsonDepth));
  if (!doc.is_object()) return Status::InvalidArgument("graph JSON is not an object");
  const bool tf_graph = StringField(doc, "type") == "GraphDef" && HasOps(doc);
  std::vector<GraphNode> nodes;
  CollectNodes(doc, "", tf_graph, true, &nodes);
  return nodes;
}

}  // namespace trainwatch::tfevents
