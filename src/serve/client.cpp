#include "serve/client.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "serve/socket.hpp"

namespace kerncap::serve {

CallResult call(const std::string& name, const Request& r, std::chrono::milliseconds reply_timeout) {
  CallResult out;
  try {
    const Fd fd = connect_to(name);
    if (!fd) return out;  // NoServer
    out.status = CallResult::Status::Failed;
    const Peer peer = peer_of(fd);
    out.server_pid = peer.pid;
    // Anyone may bind an abstract name: only a server of our own user is believed.
    if (peer.uid != ::geteuid()) {
      out.why = fmt::format("the process listening on @{} (pid {}) belongs to uid {}, not to this user", name,
                            peer.pid, peer.uid);
      return out;
    }
    write_line(fd, encode(r), std::chrono::milliseconds(2000));
    out.response = decode_response(read_line(fd, kMaxResponse, reply_timeout));
    out.status = CallResult::Status::Answered;
  } catch (const IoError& e) {
    out.why = fmt::format("no answer from kerncap serve (pid {}): {}", out.server_pid, e.what());
  } catch (const ProtocolError& e) {
    out.why = fmt::format("kerncap serve (pid {}) answered outside the contract: {}", out.server_pid, e.what());
  } catch (const std::exception& e) {
    out.status = CallResult::Status::Failed;  // a server is there (a full backlog) or the socket call failed
    out.why = fmt::format("kerncap serve could not be reached: {}", e.what());
  }
  return out;
}

}  // namespace kerncap::serve
