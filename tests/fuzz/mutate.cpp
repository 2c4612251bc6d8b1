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

namespace {

// Where each key of a JSON text starts (its opening quote), from a scan of the text; strings
// that are values are skipped since no ':' follows them.
std::vector<size_t> key_positions(const std::string& t) {
  std::vector<size_t> at;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '"') continue;
    size_t j = i + 1;
    while (j < t.size() && t[j] != '"') j += t[j] == '\\' ? 2 : 1;
    size_t k = j + 1;
    while (k < t.size() && (t[k] == ' ' || t[k] == '\n')) ++k;
    if (k < t.size() && t[k] == ':') at.push_back(i);
    i = j;
  }
  return at;
}

}  // namespace

void duplicate_key(std::string& t, Rng& rng) {
  const std::vector<size_t> keys = key_positions(t);
  if (keys.empty()) return;
  const size_t at = keys[below(rng, keys.size())];
  const size_t end = t.find('"', at + 1);
  const std::string key = t.substr(at, end - at + 1);
  static const char* const kValues[] = {"0", "1", "-1", "null", "\"x\"", "[]", "{}", "true", "4294967296"};
  t.insert(at, key + ":" + kValues[below(rng, std::size(kValues))] + ",");
}

void nul_bytes(std::string& t, Rng& rng) {
  static const char* const kTails[] = {"", "garbage", "{\"format\":\"other\"}", "\n\n", "}"};
  std::string tail(1, '\0');
  tail += kTails[below(rng, std::size(kTails))];
  if (below(rng, 3) == 0 && !t.empty()) t.insert(below(rng, t.size()), tail);
  else t += tail;
}

namespace {

std::string hostile_toml_value(Rng& rng) {
  static const char* const kValues[] = {
      "nan", "+nan", "-nan", "inf", "+inf", "-inf", "0", "-1", "-0.0", "0.0", "1e309", "-1e309", "5e-324",
      "9223372036854775807", "-9223372036854775808", "99999999999999999999", "0x7fffffffffffffff", "1.5", "2",
      "\"x\"", "''", "true", "false", "[]", "[1, 2]", "[\"HGMMA\", 3]", "{}", "{ atol = nan, rtol = -1 }",
      "{ atol = 1, eps = 2 }", "1979-05-27T07:32:00Z", "\"(a*)*b\"", "[\"(\"]", "[\"\\\\\"]", "\"\\u0000\"",
  };
  switch (below(rng, 6)) {
    case 0: {  // arrays nested deep
      const size_t n = 1 + below(rng, 5000);
      return std::string(n, '[') + "1" + std::string(n, ']');
    }
    case 1: {  // a regex nested deep (compiled when read: a recursive compiler)
      const size_t n = 1 + below(rng, 50000);
      return "[\"" + std::string(n, '(') + "a" + std::string(n, ')') + "\"]";
    }
    case 2: return "\"" + std::string(1 + below(rng, 200000), 'A') + "\"";
    case 3: {  // inline tables nested deep
      const size_t n = 1 + below(rng, 3000);
      std::string v;
      for (size_t i = 0; i < n; ++i) v += "{ a = ";
      v += "1";
      for (size_t i = 0; i < n; ++i) v += " }";
      return v;
    }
    default: return kValues[below(rng, std::size(kValues))];
  }
}

}  // namespace

void mutate_toml(std::string& t, Rng& rng) {
  const int edits = 1 + static_cast<int>(below(rng, 3));
  for (int e = 0; e < edits; ++e) {
    // The lines that set a key.
    std::vector<std::pair<size_t, size_t>> values;  // where the value starts, where its line ends
    for (size_t at = 0; at < t.size();) {
      size_t eol = t.find('\n', at);
      if (eol == std::string::npos) eol = t.size();
      const size_t eq = t.find('=', at);
      if (eq < eol && t[at] != '#' && t[at] != '[') values.push_back({eq + 1, eol});
      at = eol + 1;
    }
    static const char* const kSections[] = {"[tolerances]", "[invariants]", "[artifact_checks]", "[timing]",
                                            "[nothing]",    "[[rule]]",     "[[test]]",          "[ops]"};
    static const char* const kKeys[] = {"min_speedup", "fp32", "no_nan", "must_write", "max_registers",
                                        "required_patterns", "forbidden_patterns", "max_spills", "match",
                                        "strategy", "kinds", "under", "file", "command", "name"};
    switch (below(rng, 7)) {
      case 0:
      case 1:
        if (!values.empty()) {
          const auto [v, eol] = values[below(rng, values.size())];
          t.replace(v, eol - v, " " + hostile_toml_value(rng));
          break;
        }
        [[fallthrough]];
      case 2:  // a line under a (maybe new) section
        t += std::string("\n") + kSections[below(rng, std::size(kSections))] + "\n" + kKeys[below(rng, std::size(kKeys))] +
             " = " + hostile_toml_value(rng) + "\n";
        break;
      case 3:  // a key given twice
        if (!values.empty()) {
          const auto [v, eol] = values[below(rng, values.size())];
          size_t bol = t.rfind('\n', v);
          bol = bol == std::string::npos ? 0 : bol + 1;
          t.insert(eol, "\n" + t.substr(bol, eol - bol));
        }
        break;
      case 4: t += "\n#" + std::string(below(rng, 3u << 20), 'c') + "\n"; break;  // a huge comment
      case 5: nul_bytes(t, rng); break;
      default: {
        Bytes b(t.begin(), t.end());
        mutate_bytes(b, rng, {});
        t.assign(b.begin(), b.end());
        break;
      }
    }
  }
}

}  // namespace kerncap::fuzz
