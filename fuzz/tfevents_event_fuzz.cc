// One TensorBoard event record (the data of one TFRecord, tensorflow/core/util/event.proto) as
// `trainwatch import` and `trainwatch watch` decode it: DecodeEvent, summaries (scalars, v1 and v2
// histograms, images, text, tensors of every dtype), GraphDefs and MetaGraphDefs, graph JSON.
// The checks are in tfevents_check.h. tfevents_file_fuzz covers the framing around records.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/tfevents_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view record(reinterpret_cast<const char*>(data), size);
  trainwatch::tfevents::TagPlugins plugins;
  trainwatch::fuzz::CheckEventRecord(record, &plugins);
  // Tags seen with plugin metadata now decide how the same record's tensors are read.
  trainwatch::fuzz::CheckEventRecord(record, &plugins);
  return 0;
}
