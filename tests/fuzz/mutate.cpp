#include "mutate.hpp"

#include <algorithm>
#include <cstring>

namespace kerncap::fuzz {

namespace {

uint64_t below(Rng& rng, uint64_t n) { return n ? rng() % n : 0; }

const uint64_t kInteresting[] = {0,          1,          2,          7,          8,         16,
                                 64,         0x7f,       0x80,       0xff,       0x100,     0x7fff,
                                 0xffff,     0x10000,    0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
                                 1ull << 40, 0x7fffffffffffffffull,  0x8000000000000000ull, ~0ull};

void write_int(Bytes& d, uint64_t at, uint64_t v, unsigned width) {
  for (unsigned i = 0; i < width && at + i < d.size(); ++i) d[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

void mutate_bytes(Bytes& d, Rng& rng, const std::vector<Bytes>& splice_from) {
  const int edits = 1 + static_cast<int>(below(rng, 4));
  for (int e = 0; e < edits; ++e) {
    if (d.empty()) {
      d.push_back(static_cast<uint8_t>(rng()));
      continue;
    }
    // Headers sit in the first KiBs: edit there more often.
    const uint64_t span = below(rng, 2) ? d.size() : std::min<uint64_t>(d.size(), 4096);
    const uint64_t at = below(rng, span);
    switch (below(rng, 8)) {
      case 0: d[at] ^= static_cast<uint8_t>(1u << below(rng, 8)); break;
      case 1: d[at] = static_cast<uint8_t>(rng()); break;
      case 2: {
        const unsigned width = 1u << below(rng, 4);  // 1, 2, 4, 8
        uint64_t v = kInteresting[below(rng, std::size(kInteresting))];
        if (below(rng, 4) == 0) v = ~v;
        write_int(d, at & ~uint64_t(width - 1), v, width);
        break;
      }
      case 3: {  // delete a range
        const uint64_t n = std::min<uint64_t>(d.size() - at, 1 + below(rng, 64));
        d.erase(d.begin() + static_cast<std::ptrdiff_t>(at), d.begin() + static_cast<std::ptrdiff_t>(at + n));
        break;
      }
      case 4: {  // duplicate a range
        const uint64_t n = std::min<uint64_t>(d.size() - at, 1 + below(rng, 64));
        const Bytes copy(d.begin() + static_cast<std::ptrdiff_t>(at), d.begin() + static_cast<std::ptrdiff_t>(at + n));
        d.insert(d.begin() + static_cast<std::ptrdiff_t>(below(rng, d.size())), copy.begin(), copy.end());
        break;
      }
      case 5: d.resize(below(rng, d.size())); break;  // truncate
      case 6: {  // splice another seed's bytes in
        if (splice_from.empty()) break;
        const Bytes& o = splice_from[below(rng, splice_from.size())];
        if (o.empty()) break;
        const uint64_t from = below(rng, o.size()), n = std::min<uint64_t>(o.size() - from, 1 + below(rng, 256));
        std::memcpy(d.data() + at, o.data() + from, std::min<uint64_t>(n, d.size() - at));
        break;
      }
      default: d.insert(d.begin() + static_cast<std::ptrdiff_t>(at), 1 + below(rng, 16), static_cast<uint8_t>(rng())); break;
    }
  }
}

void deep_nesting(std::string& text, Rng& rng) {
  const size_t brace = text.find('{');
  if (brace == std::string::npos) return;
  const size_t levels = 1000 + below(rng, 200000);
  const bool objects = below(rng, 2);
  std::string deep;
  deep.reserve(levels * 8);
  for (size_t i = 0; i < levels; ++i) deep += objects ? "{\"a\":" : "[";
  deep += "1";
  for (size_t i = 0; i < levels; ++i) deep += objects ? "}" : "]";
  // Under a key the reader keeps (the manifest copies "config" whole) or one it ignores.
  const char* key = below(rng, 2) ? "config" : "deep";
  const size_t at = text.find(std::string("\"") + key + "\":");
  if (at != std::string::npos) {
    const size_t value = text.find(':', at) + 1;
    text.insert(value, deep + ",\"_\":");  // the old value moves to key "_" (no syntax change)
    return;
  }
  text.insert(brace + 1, "\"" + std::string(key) + "\":" + deep + ",");
}

std::string hostile_string(Rng& rng) {
  static const char* const kStrings[] = {
      "",
      "..",
      "../../../../../../etc/passwd",
      "/etc/passwd",
      "/proc/self/mem",
      "/dev/zero",
      "mem/../../outside",
      "mem/0.bin\n",
      "a\nrun:\n\ttouch PWNED",
      "$(shell touch PWNED)",
      "`touch PWNED`",
      "$$(touch PWNED)",
      "'; touch PWNED; '",
      "x\\",
      "# comment",
      "\x1b[31mred",
      "image/00000000000000ab.cubin",
      "capture",
      "mem",
      ".",
      "-rf",
  };
  std::string s = kStrings[below(rng, std::size(kStrings))];
  switch (below(rng, 6)) {
    case 0: s.push_back('\0'); s += "tail"; break;
    case 1: s = std::string(1 + below(rng, 100000), 'A'); break;
    case 2: s += static_cast<char>(0x80 + below(rng, 0x80)); break;  // invalid UTF-8
    default: break;
  }
  return s;
}

namespace {

nlohmann::json hostile_value(Rng& rng, int depth_hint) {
  switch (below(rng, 14)) {
    case 0: return nullptr;
    case 1: return below(rng, 2) == 1;
    case 2: return static_cast<int64_t>(-1 - static_cast<int64_t>(below(rng, 5)));
    case 3: return kInteresting[below(rng, std::size(kInteresting))];
    case 4: return 1e300;
    case 5: return -1e300;
    case 6: return 1.5;
    case 7: return std::numeric_limits<int64_t>::min();
    case 8: return hostile_string(rng);
    case 9: return nlohmann::json::array();
    case 10: return nlohmann::json::object();
    case 11: {  // nesting (deeper nesting is spliced in as text: deep_nesting)
      nlohmann::json v = 1;
      const int levels = 1 + static_cast<int>(below(rng, static_cast<uint64_t>(depth_hint)));
      for (int i = 0; i < levels; ++i) v = nlohmann::json::array({std::move(v)});
      return v;
    }
    case 12: return static_cast<uint64_t>(below(rng, 1 << 20));
    default: return static_cast<uint64_t>(below(rng, 4));
  }
}

// Every value in the tree, by reference, to pick one.
void collect(nlohmann::json& j, std::vector<nlohmann::json*>& out, int depth) {
  out.push_back(&j);
  if (depth > 64) return;
  if (j.is_object() || j.is_array())
    for (auto& v : j) collect(v, out, depth + 1);
}

}  // namespace

void mutate_json(nlohmann::json& root, Rng& rng) {
  const int edits = 1 + static_cast<int>(below(rng, 3));
  for (int e = 0; e < edits; ++e) {
    std::vector<nlohmann::json*> all;
    collect(root, all, 0);
    nlohmann::json& v = *all[below(rng, all.size())];
    switch (below(rng, 6)) {
      case 0:
        if (v.is_object() && !v.empty()) {
          auto it = v.begin();
          std::advance(it, static_cast<std::ptrdiff_t>(below(rng, v.size())));
          v.erase(it);
          break;
        }
        [[fallthrough]];
      case 1:
        if (v.is_array() && !v.empty()) {
          if (below(rng, 2)) v.erase(v.begin() + static_cast<std::ptrdiff_t>(below(rng, v.size())));
          else for (int i = 0, n = static_cast<int>(below(rng, 8)); i < n; ++i) v.push_back(v[below(rng, v.size())]);
          break;
        }
        [[fallthrough]];
      case 2:  // a number nudged: off by one, doubled, negated
        if (v.is_number_unsigned()) {
          const uint64_t n = v.get<uint64_t>();
          const uint64_t choices[] = {n + 1, n - 1, n * 2, n + 4096, n / 2, 0};
          v = choices[below(rng, std::size(choices))];
          break;
        }
        [[fallthrough]];
      default: v = hostile_value(rng, 64); break;
    }
  }
}

}  // namespace kerncap::fuzz
