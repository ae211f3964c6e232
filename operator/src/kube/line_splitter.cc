#include "kube/line_splitter.h"

namespace kubedist::kube {

Error LineSplitter::too_long() {
  line_.clear();
  const std::string limit = max_line_ % (size_t{1} << 20) == 0 ? std::to_string(max_line_ >> 20) + " MiB"
                                                              : std::to_string(max_line_) + " bytes";
  return Error{Error::Kind::kOther, "a line of the stream is longer than " + limit + ": the stream is not read on", 0};
}

Result<bool> LineSplitter::feed(std::string_view bytes, const OnLine& on_line) {
  while (!bytes.empty()) {
    const size_t newline = bytes.find('\n');
    const size_t take = newline == std::string_view::npos ? bytes.size() : newline;
    // One byte more than max_line may wait: the "\r" a line of max_line bytes may end with.
    if (line_.size() + take > max_line_ + 1) return too_long();
    line_.append(bytes.substr(0, take));
    if (newline == std::string_view::npos) return true;
    bytes.remove_prefix(newline + 1);
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (line_.size() > max_line_) return too_long();
    const bool go_on = on_line(line_);
    line_.clear();
    if (!go_on) return false;
  }
  return true;
}

Result<bool> LineSplitter::finish(const OnLine& on_line) {
  if (line_.empty()) return true;
  if (line_.back() == '\r') line_.pop_back();
  if (line_.size() > max_line_) return too_long();
  const bool go_on = on_line(line_);
  line_.clear();
  return go_on;
}

}  // namespace kubedist::kube
