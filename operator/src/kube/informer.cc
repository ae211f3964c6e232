#include "kube/informer.h"

namespace kubedist::kube {

std::string object_key(const nlohmann::json& obj) {
  const nlohmann::json md = obj.value("metadata", nlohmann::json::object());
  return md.value("namespace", "") + "/" + md.value("name", "");
}

std::chrono::milliseconds Backoff::next() {
  using std::chrono::milliseconds;
  current_ = current_.count() == 0 ? milliseconds(200) : std::min(current_ * 2, milliseconds(5000));
  return current_;
}

}  // namespace kubedist::kube
