// A TensorBoard event file (TFRecord framing with masked CRC-32C, src/tfevents/record_reader.h)
// and every event in it (tfevents_check.h), as `trainwatch import` reads a whole file.
//
// Two kinds of input. Raw: the bytes are the file (corruption, resynchronisation, torn tails).
// Framed (first byte 'F'): the rest is pieces of <u16 length><bytes>, each framed as a record with
// valid checksums, so the fuzzer reaches the events; the byte after 'F' names one byte of the
// file to flip (0: none).
//
// Checks, besides memory safety: results come in file order and each consumes what lies ahead
// (nothing for kIncomplete); a record's data lies inside the file; a file read in two steps (a
// prefix, then all of it, as `watch` reads a growing file) gives the records of one read and
// stops at the same place.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/tfevents_check.h"
#include "storage/binary_io.h"
#include "tfevents/masked_crc.h"
#include "tfevents/record_reader.h"

namespace {

using namespace trainwatch;

std::string FramedFile(std::string_view in) {
  uint8_t flip = in.empty() ? 0 : static_cast<uint8_t>(in[0]);
  if (!in.empty()) in.remove_prefix(1);
  std::string file;
  while (in.size() >= 2) {
    size_t len = static_cast<uint8_t>(in[0]) | static_cast<uint8_t>(in[1]) << 8;
    in.remove_prefix(2);
    std::string_view data = in.substr(0, len);
    in.remove_prefix(data.size());
    std::string header;
    storage::PutFixed64(&header, data.size());
    storage::PutFixed32(&header, tfevents::MaskedCrc(header.data(), 8));
    file += header;
    file += data;
    storage::PutFixed32(&file, tfevents::MaskedCrc(data.data(), data.size()));
  }
  file += in;  // a torn tail
  if (flip != 0 && !file.empty()) file[(flip * 7) % file.size()] ^= 0x20;
  return file;
}

struct Found {
  uint64_t offset;
  std::string data;
  bool operator==(const Found&) const = default;
};

// Reads `file` from `from` (a position a previous read stopped at) until kIncomplete; returns
// where it stopped. (Corrupt stretches may be reported in other pieces by a read in steps: only
// the records and the stopping point must agree.)
uint64_t ReadAll(std::string_view file, uint64_t from, std::vector<Found>* found) {
  tfevents::RecordReader reader(file.substr(from), from);
  for (;;) {
    const uint64_t at = reader.position();
    tfevents::RecordResult r = reader.Next();
    FUZZ_CHECK(r.offset == at, "result not at the reader's position");
    FUZZ_CHECK(r.consumed <= file.size() - at, "consumed past the end");
    if (r.status == tfevents::RecordStatus::kIncomplete) {
      FUZZ_CHECK(r.consumed == 0, "kIncomplete consumed bytes");
      FUZZ_CHECK(r.needed > file.size() - at || r.needed == tfevents::kRecordHeaderBytes, "needed");
      return at;
    }
    FUZZ_CHECK(r.consumed > 0, "no progress");
    if (r.status == tfevents::RecordStatus::kRecord) {
      FUZZ_CHECK(fuzz::ViewWithin(r.data, file), "record data outside the file");
      found->push_back({r.offset, std::string(r.data)});
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string file = !input.empty() && input[0] == 'F' ? FramedFile(input.substr(1)) : std::string(input);

  std::vector<Found> whole;
  const uint64_t end = ReadAll(file, 0, &whole);
  tfevents::TagPlugins plugins;
  for (const Found& f : whole) {
    fuzz::CheckEventRecord(f.data, &plugins);
  }

  std::vector<Found> steps;
  const uint64_t stopped = ReadAll(std::string_view(file).substr(0, file.size() / 2), 0, &steps);
  FUZZ_CHECK(ReadAll(file, stopped, &steps) == end, "a file read in two steps stopped elsewhere");
  FUZZ_CHECK(steps == whole, "a file read in two steps gave other records");
  return 0;
}
