#pragma once
// One pool of threads per process for work that splits into independent items (decoding
// the chunks of a restore piece). Threads are started once, on first use, one per hardware
// thread: starting sixteen threads for every 64 MiB piece cost more than a chunk's decode
// on small pieces, and a pool sized to the cores is what reaches the page cache's speed.
#include <cstddef>
#include <functional>

namespace kerncap::pool {

// Runs f(0) .. f(n - 1), each once, on at most `max_threads` threads (0: all of the pool's),
// the calling thread included, and returns when all have run. The first exception thrown
// is rethrown here after the items already started have finished; items not yet started
// are skipped. Calls may nest (an item may call parallel_for) and may come from several
// threads at once: a caller always works on its own items, so it never waits on a pool that
// is busy elsewhere. After fork() the child starts its own pool.
void parallel_for(size_t n, const std::function<void(size_t)>& f, unsigned max_threads = 0);

// Threads parallel_for can use (the pool's plus the caller): the hardware threads, at least 1.
unsigned threads();

}  // namespace kerncap::pool
