# Chunk codec benchmark (standalone main): bench/encoding_bench.cc. Included from bench/CMakeLists.txt.
add_executable(encoding_bench ${CMAKE_CURRENT_LIST_DIR}/encoding_bench.cc)
target_link_libraries(encoding_bench PRIVATE tw_encoding nlohmann_json::nlohmann_json)
