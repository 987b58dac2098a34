#include "common/cidr.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

#include "common/strings.h"

namespace trainwatch {
namespace {

// `text` as 16 bytes (IPv4 mapped into ::ffff:0:0/96); false if it is not an address.
bool ToBytes(std::string_view text, std::array<uint8_t, 16>* out, bool* v4) {
  std::string s(text);
  in_addr a4{};
  in6_addr a6{};
  if (inet_pton(AF_INET, s.c_str(), &a4) == 1) {
    out->fill(0);
    (*out)[10] = (*out)[11] = 0xff;
    std::memcpy(out->data() + 12, &a4, 4);
    *v4 = true;
    return true;
  }
  if (inet_pton(AF_INET6, s.c_str(), &a6) == 1) {
    std::memcpy(out->data(), &a6, 16);
    *v4 = false;
    return true;
  }
  return false;
}

}  // namespace

Result<CidrList> CidrList::Parse(std::string_view text) {
  CidrList list;
  for (std::string_view item : SplitList(text)) {
    size_t slash = item.find('/');
    Network n;
    bool v4 = false;
    if (!ToBytes(item.substr(0, slash), &n.bytes, &v4)) {
      return Status::InvalidArgument("'" + std::string(item) + "' is not an IP address or network");
    }
    n.prefix = 128;
    if (slash != std::string_view::npos) {
      std::string_view bits = item.substr(slash + 1);
      int prefix = -1;
      auto [ptr, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), prefix);
      const int max = v4 ? 32 : 128;
      if (ec != std::errc() || ptr != bits.data() + bits.size() || prefix < 0 || prefix > max) {
        return Status::InvalidArgument("'" + std::string(item) + "': the prefix length must be 0 to " +
                                       std::to_string(max));
      }
      n.prefix = v4 ? prefix + 96 : prefix;
    }
    list.networks_.push_back(n);
    list.text_ += (list.text_.empty() ? "" : ",") + std::string(item);
  }
  return list;
}

bool CidrList::Contains(std::string_view address) const {
  std::array<uint8_t, 16> bytes{};
  bool v4 = false;
  if (!ToBytes(address, &bytes, &v4)) return false;
  for (const Network& n : networks_) {
    int full = n.prefix / 8, rest = n.prefix % 8;
    if (std::memcmp(bytes.data(), n.bytes.data(), full) != 0) continue;
    if (rest == 0) return true;
    const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
    if ((bytes[full] & mask) == (n.bytes[full] & mask)) return true;
  }
  return false;
}

}  // namespace trainwatch
