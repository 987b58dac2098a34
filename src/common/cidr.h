// Network allow-lists: "10.0.0.0/8", "192.168.1.7", "fd00::/8". IPv4-mapped IPv6 addresses
// (::ffff:10.1.2.3, what a dual-stack socket reports) match IPv4 networks.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trainwatch {

class CidrList {
 public:
  // Comma-separated networks; InvalidArgument naming the one at fault.
  static Result<CidrList> Parse(std::string_view text);

  bool empty() const { return networks_.empty(); }
  // The networks as parsed, comma-separated ("" for none): what Parse reads back.
  const std::string& text() const { return text_; }
  // True for an address inside one of the networks; false for an unparsable address.
  bool Contains(std::string_view address) const;

 private:
  struct Network {
    std::array<uint8_t, 16> bytes{};  // IPv4 as IPv4-mapped IPv6
    int prefix = 128;
  };
  std::vector<Network> networks_;
  std::string text_;
};

}  // namespace trainwatch
