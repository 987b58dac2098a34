// The SDK's spool segments (sdk/cpp/src/spool.h, docs/format/spool.md): batches a client wrote to
// disk while the server was away, read back after a crash by the sender and by `trainwatch sync`.
// The file may be torn or damaged.
//
// Two kinds of input. Raw: the bytes are one segment file. Framed (first byte 'F'): the rest is
// pieces of <u16 length><bytes>, each spooled as a batch as Spool writes it (zstd-compressed,
// checksummed), so that decoding gets past the checksums; then the decoded batches must be those
// pieces, in order.
//
// Either way the file is also opened as a spool directory (an in-memory file system), loaded,
// appended to and released, and every batch is parsed as the WriteRequest the sender sends.
// Checks, besides memory safety: DecodeSegment fails only for a bad magic; Spool loads exactly
// what DecodeSegment decodes.
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/crc32c.h"
#include "fuzz/fuzz_support.h"
#include "spool.h"
#include "storage/binary_io.h"
#include "trainwatch/v1/ingest.pb.h"

namespace {

using namespace trainwatch;

constexpr std::string_view kMagic = "TWSPOOL1";

std::string FramedSegment(std::string_view in, std::vector<std::string>* pieces) {
  std::string file(kMagic);
  uint64_t sequence = 1;
  while (in.size() >= 2) {
    size_t len = static_cast<uint8_t>(in[0]) | static_cast<uint8_t>(in[1]) << 8;
    in.remove_prefix(2);
    std::string_view piece = in.substr(0, len);
    in.remove_prefix(piece.size());
    std::string compressed(ZSTD_compressBound(piece.size()), '\0');
    size_t n = ZSTD_compress(compressed.data(), compressed.size(), piece.data(), piece.size(), 1);
    if (ZSTD_isError(n)) std::abort();
    compressed.resize(n);
    storage::PutFixed64(&file, sequence++);
    storage::PutFixed32(&file, static_cast<uint32_t>(piece.size()));
    storage::PutFixed32(&file, static_cast<uint32_t>(compressed.size()));
    storage::PutFixed32(&file, crc32c::Value(compressed));
    file += compressed;
    pieces->emplace_back(piece);
  }
  file += in;  // a torn tail
  return file;
}

bool SameBatches(const std::vector<sdk::SpooledBatch>& a, const std::vector<sdk::SpooledBatch>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].sequence != b[i].sequence || a[i].points != b[i].points || a[i].bytes != b[i].bytes) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const bool framed = !input.empty() && input[0] == 'F';
  std::vector<std::string> pieces;
  const std::string file = framed ? FramedSegment(input.substr(1), &pieces) : std::string(input);

  auto decoded = sdk::DecodeSegment(file);
  FUZZ_CHECK(decoded.ok() || !file.starts_with(kMagic), "a segment with its magic refused");
  if (framed) {
    FUZZ_CHECK(decoded->size() == pieces.size(), "lost spooled batches");
    for (size_t i = 0; i < pieces.size(); ++i) {
      FUZZ_CHECK((*decoded)[i].bytes == pieces[i], "a batch came back changed");
      FUZZ_CHECK((*decoded)[i].sequence == i + 1, "a batch came back with another sequence");
    }
  }
  if (decoded.ok()) {
    for (const sdk::SpooledBatch& batch : *decoded) {
      v1::WriteRequest request;
      (void)request.ParseFromString(batch.bytes);
    }
  }

  fuzz::MemFileSystem fs;
  fs.Put("/spool/00000000000000000001.seg", file);
  auto spool = sdk::Spool::Open(fs, "/spool", sdk::SpoolOptions{});
  FUZZ_CHECK(spool.ok(), spool.status().ToString());
  auto loaded = (*spool)->LoadOldest();
  FUZZ_CHECK(loaded.ok() == decoded.ok(), "Spool and DecodeSegment disagree on the file");
  if (loaded.ok()) {
    FUZZ_CHECK(loaded->first == 1 && SameBatches(loaded->second, *decoded), "Spool loaded other batches");
    uint64_t dropped = 0;
    sdk::SpooledBatch next{~uint64_t{0}, 1, "x"};
    FUZZ_CHECK((*spool)->Append(next, &dropped).ok(), "append after a damaged segment");
    FUZZ_CHECK((*spool)->Release(1).ok(), "release");
  }
  return 0;
}
