#pragma once
// The one checking macro for CUPTI calls inside the application:
//
//   if (!KC_CUPTI(cuptiActivityEnable(kind))) ...;                 // logs on failure
//   auto s = KC_CUPTI(cuptiFoo(...), CUPTI_ERROR_NOT_SUPPORTED);
//   if (s.result == CUPTI_ERROR_NOT_SUPPORTED) ...                  // expected: not logged
//
// A failure is logged with the call's text, file:line and CUPTI's own message, and
// returned, never thrown: this runs inside someone else's process.
#include <cupti.h>

#include <initializer_list>
#include <string>

#include "common/log.hpp"

namespace kerncap::capture {

struct CuptiStatus {
  CUptiResult result = CUPTI_SUCCESS;
  explicit operator bool() const { return result == CUPTI_SUCCESS; }
};

// "CUPTI_ERROR_NOT_INITIALIZED: <message>" for a result.
inline std::string cupti_error_text(CUptiResult r) {
  const char* name = nullptr;
  const char* message = nullptr;
  if (cuptiGetResultString(r, &name) != CUPTI_SUCCESS || !name) name = "unknown CUPTI error";
  std::string s = name;
  if (cuptiGetErrorMessage(r, &message) == CUPTI_SUCCESS && message && *message && s != message)
    s += std::string(": ") + message;
  return s;
}

inline CuptiStatus cupti_check(CUptiResult r, const char* call, const char* file, int line,
                               std::initializer_list<CUptiResult> expected) {
  if (r == CUPTI_SUCCESS) return {r};
  for (CUptiResult e : expected)
    if (r == e) return {r};
  log::warn("{} failed: {} (at {}:{})", call, cupti_error_text(r), file, line);
  return {r};
}

// kerncap's one CUPTI subscription (capture or profile mode): cuptiSubscribe_v2 under our
// name. When another client holds CUPTI, the result is CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_
// SUPPORTED (not logged: the caller says it better) and `other` names that client when CUPTI
// knows it.
struct Subscription {
  CUpti_SubscriberHandle handle = nullptr;
  CuptiStatus status;
  std::string other;
};

inline Subscription subscribe_named(CUpti_CallbackFunc callback, void* userdata, const char* name) {
  Subscription s;
  char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = name;
  params.oldSubscriberName = other;
  params.oldSubscriberSize = sizeof(other);
  const CUptiResult r = cuptiSubscribe_v2(&s.handle, callback, userdata, &params);
  s.status = cupti_check(r, "cuptiSubscribe_v2", __FILE__, __LINE__, {CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED});
  s.other = other;
  return s;
}

}  // namespace kerncap::capture

// Extra arguments list results that are answers rather than errors (not logged).
#define KC_CUPTI(call, ...) \
  ::kerncap::capture::cupti_check((call), #call, __FILE__, __LINE__, {__VA_ARGS__})
