#pragma once
// Relocation: when a captured span cannot come back at its address (or is a module
// global, whose address the driver picks at load), it lives elsewhere and every
// pointer-sized word that points into it is rewritten — in restored memory, parameter
// bytes, module globals, and (for validation) the expected AFTER bytes alike.
#include <cstdint>
#include <vector>

namespace kerncap::replay {

struct Move {
  uint64_t old_begin = 0, old_end = 0;
  uint64_t new_begin = 0;
  bool global = false;  // a module global (always moves), not a collision
};

class RelocationMap {
 public:
  void add(Move m);
  // Forgets the module globals' moves (a session that loads another image binds its globals
  // anew); collisions stay.
  void drop_globals();
  bool empty() const { return moves_.empty(); }
  const std::vector<Move>& moves() const { return moves_; }
  // The new address of `a`, or `a` itself when it is in no moved span.
  uint64_t translate(uint64_t a) const;
  bool moved(uint64_t a) const { return translate(a) != a; }
  // Rewrites the 8-byte words of `data` (which lives at device address `addr`) that point
  // into a moved span; words are taken at 8-byte-aligned device addresses. Returns the count.
  uint64_t rewrite(uint8_t* data, uint64_t size, uint64_t addr) const;

 private:
  std::vector<Move> moves_;  // sorted by old_begin, non-overlapping
  uint64_t lo_ = UINT64_MAX, hi_ = 0;
};

}  // namespace kerncap::replay
