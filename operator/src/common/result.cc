#include "common/result.h"

namespace kubedist {

const char* to_string(Error::Kind kind) {
  switch (kind) {
    case Error::Kind::kInvalid: return "Invalid";
    case Error::Kind::kNotFound: return "NotFound";
    case Error::Kind::kConflict: return "Conflict";
    case Error::Kind::kAlreadyExists: return "AlreadyExists";
    case Error::Kind::kGone: return "Gone";
    case Error::Kind::kUnprocessable: return "Unprocessable";
    case Error::Kind::kRetryable: return "Retryable";
    case Error::Kind::kForbidden: return "Forbidden";
    case Error::Kind::kUnserializable: return "Unserializable";
    case Error::Kind::kOther: return "Other";
  }
  return "?";
}

}  // namespace kubedist
