#include "influx/gzip.h"

#include <zlib.h>

namespace trainwatch::influx {

Result<std::string> Gunzip(std::string_view gz, size_t max_bytes) {
  z_stream z{};
  // 16 + MAX_WBITS: a gzip header and trailer, not a raw zlib stream.
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return Status::Internal("inflateInit2 failed");
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  char buffer[64 * 1024];
  int rc = Z_OK;
  while (true) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    const size_t produced = sizeof buffer - z.avail_out;
    if (out.size() + produced > max_bytes) {
      inflateEnd(&z);
      return Status::ResourceExhausted("the gzip body inflates to more than " +
                                       std::to_string(max_bytes) + " bytes");
    }
    out.append(buffer, produced);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // another gzip member follows
      continue;
    }
    if (rc != Z_OK || (produced == 0 && z.avail_in == 0)) {
      inflateEnd(&z);
      return Status::InvalidArgument("the body is not valid gzip (Content-Encoding: gzip)");
    }
  }
  inflateEnd(&z);
  return out;
}

}  // namespace trainwatch::influx
