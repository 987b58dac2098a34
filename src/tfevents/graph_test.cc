#include "tfevents/graph.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/json.h"

namespace trainwatch::tfevents {
namespace {

TEST(GraphTest, GraphDefToScopeTreeAndBack) {
  const std::vector<GraphNode> nodes = {
      {"x", "Placeholder", {}, ""},
      {"dense/kernel", "VariableV2", {}, "/device:CPU:0"},
      {"dense/MatMul", "MatMul", {"x", "dense/kernel"}, ""},
      {"dense", "Identity", {"dense/MatMul", "^x"}, ""},
      {"loss", "Mean", {"dense:0"}, ""},
  };
  Result<std::vector<GraphNode>> decoded = DecodeGraphDef(EncodeGraphDef(nodes));
  ASSERT_TRUE(decoded.ok());
  ASSERT_EQ(*decoded, nodes);

  auto tree = nlohmann::json::parse(GraphToJson(nodes));
  EXPECT_EQ(tree["type"], "GraphDef");
  ASSERT_EQ(tree["children"].size(), 3u);  // x, dense, loss
  const auto& dense = tree["children"][1];
  EXPECT_EQ(dense["name"], "dense");
  EXPECT_EQ(dense["type"], "Identity");  // a node that is also a scope
  EXPECT_EQ(dense["inputs"], nlohmann::json({"dense/MatMul", "^x"}));
  ASSERT_EQ(dense["children"].size(), 2u);
  EXPECT_EQ(dense["children"][1]["path"], "dense/MatMul");
  EXPECT_EQ(dense["children"][0]["device"], "/device:CPU:0");

  Result<std::vector<GraphNode>> back = GraphFromJson(GraphToJson(nodes));
  ASSERT_TRUE(back.ok());
  // Depth-first order: the scope's own node before its children.
  std::vector<GraphNode> want = {nodes[0], nodes[3], nodes[1], nodes[2], nodes[4]};
  EXPECT_EQ(*back, want);
  EXPECT_EQ(GraphToJson(*back), GraphToJson(nodes));
}

TEST(GraphTest, SdkModuleTreesBecomeOneNodePerModule) {
  const char* tree = R"({"name": "", "type": "Net", "params": [], "children": [
      {"name": "fc1", "path": "fc1", "type": "Linear", "params": [], "children": []},
      {"name": "block", "type": "Sequential", "params": [], "children": [
         {"name": "0", "path": "block.0", "type": "ReLU", "params": [], "children": []}]}]})";
  Result<std::vector<GraphNode>> nodes = GraphFromJson(tree);
  ASSERT_TRUE(nodes.ok());
  std::vector<GraphNode> want = {
      {"fc1", "Linear", {}, ""}, {"block", "Sequential", {}, ""}, {"block/0", "ReLU", {}, ""}};
  EXPECT_EQ(*nodes, want);
  EXPECT_FALSE(GraphFromJson("[1, 2]").ok());
  EXPECT_FALSE(GraphFromJson("{not json").ok());
}

TEST(GraphTest, MalformedGraphDefIsAnError) {
  EXPECT_FALSE(DecodeGraphDef(std::string_view("\x0a\x05\x0a\x09", 4)).ok());
}

// Found by fuzzing (fuzz/tfevents_event): one node named "a/a/.../a" 100,000 scopes deep, 200 KB of
// GraphDef, made GraphToJson hold every scope's whole path (gigabytes) and write JSON nested far
// beyond what the server accepts.
TEST(GraphTest, NamesNestAtMostMaxScopeDepth) {
  std::string deepest;
  for (size_t i = 0; i < kMaxGraphScopeDepth; ++i) deepest += i ? "/s" : "s";
  Result<std::vector<GraphNode>> ok = DecodeGraphDef(EncodeGraphDef({{deepest, "Op", {}, ""}}));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ParseJson(GraphToJson(*ok), kMaxGraphJsonDepth).ok());

  Result<std::vector<GraphNode>> deeper = DecodeGraphDef(EncodeGraphDef({{deepest + "/s", "Op", {}, ""}}));
  ASSERT_FALSE(deeper.ok());
  EXPECT_NE(deeper.status().message().find("nests more than 100 name scopes"), std::string::npos)
      << deeper.status().message();
}

}  // namespace
}  // namespace trainwatch::tfevents
