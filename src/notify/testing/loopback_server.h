// LoopbackServer: the socket side of the tests' receivers (HttpListener, SmtpListener) — a TCP
// port on 127.0.0.1 served one connection at a time on its own thread. Tests only: aborts when
// the port cannot be opened.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

namespace trainwatch::notify::test {

class LoopbackServer {
 public:
  // Called for each accepted connection on the server's thread; the server closes `fd` after.
  using Handler = std::function<void(int fd)>;

  // Binds a free port and starts accepting. `handler` must stay callable until destruction.
  explicit LoopbackServer(Handler handler);
  // Stops accepting (after the connection being handled, if any) and joins the thread.
  ~LoopbackServer();
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  uint16_t port() const { return port_; }

 private:
  void Serve();

  Handler handler_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A socket bound (not listening) to a free loopback port, which is stored in *port.
int BindLoopback(uint16_t* port);
// Sends all of `data`; false when the peer went away.
bool SendAll(int fd, const std::string& data);

}  // namespace trainwatch::notify::test
